import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./free-port.js";

/** A real Redis server on loopback, in a temporary directory, for tests. */
export interface RedisServer {
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** Stops the server (it can be started again on the same port). */
  stop(): Promise<void>;
  /** Starts it again on the same port, empty. */
  start(): Promise<void>;
  /** Stops it and removes its directory. */
  close(): Promise<void>;
}

/** Whether something answers PING on the port. */
function pings(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    socket.once("error", () => resolve(false));
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.once("data", (data) => {
      socket.destroy();
      resolve(data.toString().startsWith("+PONG"));
    });
  });
}

/**
 * Starts Debian's `redis-server` (apt-get install -y redis-server; .ci/run installs it) on a free loopback
 * port, with nothing saved to disk.
 */
export async function startRedis(): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), "makina-redis-"));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    const spawned = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir], { stdio: "ignore" });
    child = spawned;
    const failed = new Promise<never>((_, reject) => {
      spawned.once("error", (err) => reject(new Error(`redis-server could not start (apt-get install -y redis-server): ${err.message}`)));
      spawned.once("exit", (code) => reject(new Error(`redis-server exited at start (code ${code})`)));
    });
    failed.catch(() => undefined);
    const deadline = Date.now() + 10_000;
    while (!(await Promise.race([pings(port), failed]))) {
      if (Date.now() > deadline) throw new Error("redis-server did not answer within 10 s");
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
    url: `redis://127.0.0.1:${port}`,
    port,
    stop,
    start,
    close: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
