import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { freePort } from "./free-port.js";

/** A real PostgreSQL server on loopback, in a temporary directory, for tests. */
export interface PostgresServer {
  /** `postgres://makina@127.0.0.1:<port>/postgres`: the server's maintenance database, as its superuser. */
  readonly url: string;
  readonly port: number;
  /** Shuts the server down (fast shutdown: sessions end), keeping its data. */
  pause(): Promise<void>;
  /** Starts it again on the same port and data, after {@link pause}. */
  resume(): Promise<void>;
  /** Shuts it down and removes its data. */
  stop(): Promise<void>;
}

/** Where PostgreSQL's programs are: Debian's newest version, or whatever `initdb` the PATH has. */
function binDir(): string {
  const debian = "/usr/lib/postgresql";
  if (existsSync(debian)) {
    const versions = readdirSync(debian)
      .filter((v) => existsSync(join(debian, v, "bin", "postgres")))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return join(debian, versions[0], "bin");
  }
  try {
    return execFileSync("pg_config", ["--bindir"], { encoding: "utf8" }).trim();
  } catch {
    throw new Error("PostgreSQL is not installed: the tests need its server (Debian: apt-get install -y postgresql-15; .ci/run installs it).");
  }
}

/**
 * Starts PostgreSQL in a fresh temporary cluster. PostgreSQL refuses to run as root (as CI does), so as root
 * it runs as the `postgres` user (the Debian package's), or `nobody`. Durability is off (fsync, full page
 * writes): a test's database lives as long as the test.
 */
export async function startPostgres(): Promise<PostgresServer> {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), "makina-pg-"));
  const root = userInfo().uid === 0;
  const runAs = root ? unprivilegedUser() : null;
  if (runAs) chownSync(dir, runAs.uid, runAs.gid);
  // As root, the programs run directly as the unprivileged user (no runuser in between, so a signal reaches
  // PostgreSQL itself).
  const as = runAs ? { uid: runAs.uid, gid: runAs.gid, env: { ...process.env, HOME: dir, USER: runAs.name } } : {};
  const data = join(dir, "data");
  execFileSync(join(bin, "initdb"), ["-D", data, "-U", "makina", "--auth=trust", "-E", "UTF8", "--no-sync", "--locale=C"], { stdio: "pipe", cwd: dir, ...as });
  const port = await freePort();
  const args = [
    "-D", data, "-p", String(port), "-k", dir, "-c", "listen_addresses=127.0.0.1",
    "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200",
  ];
  let child: ChildProcess | undefined;
  let log = "";
  const url = `postgres://makina@127.0.0.1:${port}/postgres`;
  const launch = async () => {
    const running = spawn(join(bin, "postgres"), args, { stdio: ["ignore", "ignore", "pipe"], cwd: dir, ...as });
    child = running;
    running.stderr!.on("data", (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4000)));
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (running.exitCode !== null) throw new Error(`PostgreSQL exited at start:\n${log}`);
      const client = new pg.Client({ connectionString: url });
      client.on("error", () => undefined);
      try {
        await client.connect();
        await client.end();
        return;
      } catch (err) {
        await client.end().catch(() => undefined);
        if (Date.now() > deadline) throw new Error(`PostgreSQL did not start within 30 s: ${String(err)}\n${log}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  const halt = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise((r) => running.once("exit", r));
    // SIGINT: PostgreSQL's fast shutdown (ends sessions, no waiting for clients).
    running.kill("SIGINT");
    const late = setTimeout(() => running.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(late);
  };
  await launch();
  return {
    url,
    port,
    pause: halt,
    resume: launch,
    stop: async () => {
      await halt();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function unprivilegedUser(): { name: string; uid: number; gid: number } {
  for (const name of ["postgres", "nobody"]) {
    try {
      const uid = Number(execFileSync("id", ["-u", name], { encoding: "utf8" }).trim());
      const gid = Number(execFileSync("id", ["-g", name], { encoding: "utf8" }).trim());
      return { name, uid, gid };
    } catch {
      // not on this system
    }
  }
  throw new Error("Running as root, and there is no 'postgres' or 'nobody' user to run PostgreSQL as.");
}

/** Makes an empty database on the server for one test file, and returns its URL. */
export async function createTestDatabase(serverUrl: string, name = `makina_${Math.random().toString(36).slice(2, 10)}`): Promise<string> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  return serverUrl.replace(/\/[^/]*$/, `/${name}`);
}

/** `pg_dump` of a database (schema and rows, as SQL text): what a backup, or anyone able to read the database, holds. */
export function pgDump(url: string): string {
  return execFileSync(join(binDir(), "pg_dump"), ["--no-owner", url], { encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
}
