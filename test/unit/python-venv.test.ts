import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { installIntoVenv } from "../../agent/runtimes/python-venv.js";
import { silentLogger } from "../../proto/index.js";
import { REPO_ROOT } from "../helpers/models.js";

// The `python3` stand-in (test/fixtures/standins) creates venvs and "installs" vllm as pip would; PyPI is out of reach.
describe("installing a Python runtime", () => {
  const dir = mkdtempSync(join(tmpdir(), "makina-venv-"));
  const log = join(dir, "calls.log");
  afterAll(() => {
    delete process.env.STANDIN_LOG;
    rmSync(dir, { recursive: true, force: true });
  });

  it("installs the pinned requirement once, and again only when the pin changes", async () => {
    writeFileSync(log, "");
    process.env.STANDIN_LOG = log;
    const ctx = { env: process.env as Record<string, string>, runtimesDir: join(dir, "runtimes"), python: join(REPO_ROOT, "test", "fixtures", "standins", "python3"), log: silentLogger() };
    const pips = () => readFileSync(log, "utf8").split("\n").filter((l) => l.includes("pip install"));
    await installIntoVenv("vllm", ["vllm==0.20.0"], "vllm", ctx);
    await installIntoVenv("vllm", ["vllm==0.20.0"], "vllm", ctx);
    expect(pips()).toEqual(["python -m pip install --upgrade vllm==0.20.0"]);
    await installIntoVenv("vllm", ["vllm==0.20.1"], "vllm", ctx);
    expect(pips()).toEqual(["python -m pip install --upgrade vllm==0.20.0", "python -m pip install --upgrade vllm==0.20.1"]);
    // The venv was made once.
    expect(readFileSync(log, "utf8").split("\n").filter((l) => l.includes("-m venv"))).toHaveLength(1);
  });
});
