import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./free-port.js";

/** A real server program on a loopback port, in a temporary directory, for tests. */
export interface SpawnedServer {
  readonly port: number;
  /** Kills it (SIGKILL); it can be started again on the same port. */
  stop(): Promise<void>;
  /** Starts it again on the same port. */
  start(): Promise<void>;
  /** Stops it and removes its directory. */
  close(): Promise<void>;
}

/** Whether what answers on the port first says something starting with `greeting`, after `hello` is sent (if any). */
export function answers(port: number, greeting: string, hello?: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    socket.once("error", () => resolve(false));
    if (hello) socket.once("connect", () => socket.write(hello));
    socket.once("data", (data) => {
      socket.destroy();
      resolve(data.toString().startsWith(greeting));
    });
  });
}

/**
 * Starts `command` (a Debian package's server: `.ci/run` installs it) with `args(port, dir)` on a free loopback
 * port, and waits until `ready(port)` says it answers.
 */
export async function spawnServer(command: string, args: (port: number, dir: string) => string[], ready: (port: number) => Promise<boolean>): Promise<SpawnedServer> {
  const dir = mkdtempSync(join(tmpdir(), `makina-${command}-`));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    const spawned = spawn(command, args(port, dir), { stdio: "ignore" });
    child = spawned;
    const failed = new Promise<never>((_, reject) => {
      spawned.once("error", (err) => reject(new Error(`${command} could not start (is its Debian package installed?): ${err.message}`)));
      spawned.once("exit", (code) => reject(new Error(`${command} exited at start (code ${code})`)));
    });
    failed.catch(() => undefined);
    const deadline = Date.now() + 10_000;
    while (!(await Promise.race([ready(port), failed]))) {
      if (Date.now() > deadline) throw new Error(`${command} did not answer within 10 s`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const stop = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise((r) => running.once("exit", r));
    running.kill("SIGKILL");
    await exited;
  };
  await start();
  return {
    port,
    stop,
    start,
    close: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
