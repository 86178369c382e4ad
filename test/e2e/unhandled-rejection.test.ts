import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { CLI } from "../helpers/cli.js";

describe("a promise that fails with nobody awaiting it", () => {
  const dir = mkdtempSync(join(tmpdir(), "makina-rejection-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("is logged as one error line, and the relay keeps serving", async () => {
    // A module loaded before the CLI leaves a rejected promise unhandled once the relay runs.
    const rejecter = `data:text/javascript,setTimeout(() => Promise.reject(new Error("nobody awaited this")), 1500);`;
    const relay = spawn(process.execPath, ["--import", rejecter, CLI, "relay", "--data-dir", join(dir, "relay"), "--port", "0", "--grpc-port", "0"], { stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    relay.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    try {
      await vi.waitFor(() => expect(stderr).toContain("unhandled promise rejection"), { timeout: 15_000, interval: 50 });
      const line = stderr.split("\n").find((l) => l.includes("unhandled promise rejection"))!;
      expect(JSON.parse(line)).toMatchObject({ level: "error", msg: "unhandled promise rejection", err: { message: "nobody awaited this" } });
      // On a loaded machine the timer can fire before the relay has written where it listens.
      const { url } = await vi.waitFor(() => JSON.parse(readFileSync(join(dir, "relay", "relay.json"), "utf8")) as { url: string }, { timeout: 15_000, interval: 50 });
      expect((await fetch(`${url}/health`)).status).toBe(200);
      expect(relay.exitCode).toBeNull();
    } finally {
      relay.kill("SIGTERM");
    }
  });
});
