import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { resolveAgentConfig, startAgent } from "../../agent/index.js";
import { PartStartError, silentLogger } from "../../proto/index.js";
import { resolveRelayConfig } from "../../relay/index.js";
import { startRelay } from "../../relay/start/start-relay.js";
import { CLI } from "../helpers/cli.js";

/** Holds a port as another program would: listening on `host`, on a free port unless given one. */
async function takePort(host = "127.0.0.1"): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return { port: (server.address() as { port: number }).port, server };
}

const close = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));

describe("a relay or an agent that cannot start says which part failed and which setting changes it, and leaves nothing behind", () => {
  const dirs: string[] = [];
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), "makina-start-"));
    dirs.push(dir);
    return dir;
  };
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const base = { port: 0, grpcPort: 0, grpcHost: "127.0.0.1", installPort: 0 };

  // Each listener in turn finds its port taken: the start fails naming it, and the parts that had started
  // (data directory, database, link, the listeners before it) are stopped: the same data directory starts a
  // relay at once afterwards, and the leak check after this file finds no socket or timer left.
  const listeners = [
    { what: "gateway", flags: (p: number) => ({ port: p }), setting: "--port or MAKINA_PORT" },
    { what: "admin", flags: (p: number) => ({ adminPort: p }), setting: "--admin-port or MAKINA_ADMIN_PORT" },
    { what: "install", flags: (p: number) => ({ installPort: p, grpcTls: "on" }), setting: "--install-port or MAKINA_INSTALL_PORT" },
    { what: "link", flags: (p: number) => ({ grpcPort: p }), setting: "--grpc-port or MAKINA_GRPC_PORT" },
  ];
  for (const l of listeners) {
    it(`refuses to start when the ${l.what} listener's port is taken, naming ${l.setting.split(" ")[0]}`, async () => {
      const dataDir = tempDir();
      const taken = await takePort();
      try {
        const config = resolveRelayConfig({ flags: { dataDir, ...base, ...l.flags(taken.port) } });
        const err: unknown = await startRelay(config, { log: silentLogger() }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(PartStartError);
        const failure = err as PartStartError;
        expect(failure.part).toMatch(new RegExp(`^the ${l.what} listener \\(127\\.0\\.0\\.1:${taken.port}\\)$`));
        expect(failure.message).toBe(`The relay could not start: ${failure.part}: 127.0.0.1:${taken.port} is already in use by another program; change it with ${l.setting}.`);
        expect(existsSync(join(dataDir, "relay.lock"))).toBe(false);
      } finally {
        await close(taken.server);
      }
      // The same data directory and port, now free: the failed start held neither.
      const relay = await startRelay(resolveRelayConfig({ flags: { dataDir, ...base, ...l.flags(taken.port) } }), { log: silentLogger() });
      const parts = relay.parts().map((p) => p.name);
      expect(parts.slice(0, 6)).toEqual(["the data directory", "the database", "the database's retries", "the secrets key", "the admin token", "the gateway directory"]);
      expect(parts.some((p) => p.startsWith(`the ${l.what} listener`))).toBe(true);
      await relay.stop();
      expect(relay.parts().filter((p) => p.state !== "stopped")).toEqual([]);
    });
  }

  it("an agent whose control socket answers for another agent does not start, and stops what it had started", async () => {
    const dataDir = tempDir();
    const relay = await startRelay(resolveRelayConfig({ flags: { dataDir: join(dataDir, "relay"), ...base } }), { log: silentLogger() });
    try {
      const flags = { server: relay.linkAddress, machineId: "mach_x", token: "mk_mach_x", dataDir: join(dataDir, "agent"), threads: 1, gpu: false };
      const first = await startAgent(resolveAgentConfig({ flags }), { log: silentLogger() });
      const err: unknown = await startAgent(resolveAgentConfig({ flags }), { log: silentLogger() }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(PartStartError);
      expect((err as PartStartError).message).toMatch(/^The agent could not start: the control socket \(.*agent\.sock\): Another agent is already running .*; change it with MAKINA_AGENT_SOCKET \(or another --data-dir\)\.$/);
      await first.stop();
      expect(first.parts().map((p) => [p.name, p.state])).toEqual(first.parts().map((p) => [p.name, "stopped"]));
    } finally {
      await relay.stop();
    }
  });

  it("`makina up` with the install port taken exits 1 at once, naming --install-port, rather than hanging on its other ports", async () => {
    // Another program on the install port, on every address, as the quickstart's link listens.
    const taken = await takePort("0.0.0.0");
    try {
      const child = spawn(process.execPath, [CLI, "up", "--data-dir", tempDir(), "--port", "0", "--grpc-port", "0", "--install-port", String(taken.port)], {
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, MAKINA_LOG_LEVEL: "error" },
      });
      let stderr = "";
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once("exit", (c, s) => resolve([c, s])));
      expect({ code, signal }).toEqual({ code: 1, signal: null });
      expect(stderr).toContain(`makina: The relay could not start: the install listener (0.0.0.0:${taken.port}): 0.0.0.0:${taken.port} is already in use by another program; change it with --install-port or MAKINA_INSTALL_PORT.`);
    } finally {
      await close(taken.server);
    }
  });
});
