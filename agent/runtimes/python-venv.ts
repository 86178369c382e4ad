import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { MakinaError } from "../../proto/index.js";
import type { RuntimeContext } from "./runtime-adapter.js";
import { runtimeEnv } from "./runtime-env.js";

const run = promisify(execFile);

/**
 * Installs Python packages (pinned requirements) into their own virtual environment under the runtimes
 * directory (`<runtimesDir>/<name>/venv`) and returns the venv's bin directory. Skips everything when
 * `binary` is there and the same requirements were installed last (kept in `<runtimesDir>/<name>/installed`);
 * other requirements (a new pin) are installed over it. pip runs without Makina's or Hugging Face's secrets.
 */
export async function installIntoVenv(name: string, packages: string[], binary: string, ctx: RuntimeContext): Promise<string> {
  const venv = join(ctx.runtimesDir, name, "venv");
  const bin = join(venv, "bin");
  const record = join(ctx.runtimesDir, name, "installed");
  const wanted = packages.join(" ");
  if (existsSync(join(bin, binary)) && (await readFile(record, "utf8").catch(() => "")) === wanted) return bin;
  await mkdir(join(ctx.runtimesDir, name), { recursive: true });
  const step = async (stage: string, file: string, args: string[]) => {
    ctx.onProgress?.({ stage, doneBytes: 0, totalBytes: 0, bytesPerSecond: 0, etaSeconds: 0 });
    ctx.log.info(stage, { command: [file, ...args].join(" ") });
    try {
      await run(file, args, { signal: ctx.signal, env: runtimeEnv(ctx.env), maxBuffer: 16 * 1024 * 1024, timeout: 60 * 60 * 1000 });
    } catch (err) {
      const e = err as { stderr?: string; message: string; code?: string };
      const detail = (e.stderr ?? "").trim().split("\n").slice(-5).join("\n") || e.message;
      throw new MakinaError("runtime_unavailable", `${stage} failed${e.code === "ENOENT" ? ` (${file} not found: install Python 3)` : ""}: ${detail}`, { cause: err });
    }
  };
  if (!existsSync(join(bin, "python"))) await step("creating a Python virtual environment", ctx.python, ["-m", "venv", venv]);
  await step(`installing ${packages.join(" ")}`, join(bin, "python"), ["-m", "pip", "install", "--upgrade", ...packages]);
  if (!existsSync(join(bin, binary))) throw new MakinaError("runtime_unavailable", `Installing ${packages.join(" ")} did not provide ${binary}.`);
  await writeFile(record, wanted);
  return bin;
}

/** The first line a binary prints for `--version`. */
export async function binaryVersion(path: string, args = ["--version"]): Promise<string> {
  try {
    const { stdout } = await run(path, args, { timeout: 30_000 });
    return stdout.trim().split("\n")[0] ?? "unknown";
  } catch {
    return "unknown";
  }
}
