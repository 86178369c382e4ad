import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { resolveAgentConfig, startAgent, type Agent } from "../../agent/index.js";
import { silentLogger } from "../../proto/index.js";
import { resolveRelayConfig, startRelay, type Relay } from "../../relay/index.js";
import { emptyDatabase } from "../helpers/databases.js";
import { startNats, type NatsServer } from "../helpers/nats-server.js";
import { fakeAdapter } from "../fakes/fake-runtime.js";

/**
 * Agents fail over: two relays on one PostgreSQL database joined over a real nats-server, with TLS on the
 * agents' link; one agent (the stand-in model of test/fakes) given both relays' addresses and the one CA
 * fingerprint of its install command. The relay it linked to stops; it links to the other, and its stack is
 * served again through either.
 */
describe("an agent given several relays", () => {
  let nats: NatsServer;
  const relays: Relay[] = [];
  const dirs: string[] = [];
  let agent: Agent;
  let key: string;
  let machineId: string;
  let installCommand: string;
  const chat = (relay: Relay) =>
    fetch(`${relay.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "stories", messages: [{ role: "user", content: "still here" }] }),
    });
  const dir = (prefix: string) => {
    const d = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(d);
    return d;
  };

  beforeAll(async () => {
    nats = await startNats();
    const location = await emptyDatabase("postgres");
    const database = location.kind === "postgres" ? location.url : "";
    for (let i = 0; i < 2; i++) {
      const flags = { dataDir: dir("makina-relay-"), database, nats: nats.url, port: 0, grpcPort: 0, grpcHost: "127.0.0.1", grpcTls: "on", drainTimeoutMs: 200, heartbeatIntervalMs: 500 };
      relays.push(await startRelay(resolveRelayConfig({ flags }), { log: silentLogger() }));
    }
    const [a] = relays as [Relay, Relay];
    const org = await a.control.createOrg("Failover");
    const made = await a.control.createMachine(org.id, "roaming");
    machineId = made.machine.id;
    installCommand = made.installCommand;
    const servers = relays.map((r) => r.linkAddress);
    agent = await startAgent(
      resolveAgentConfig({
        flags: { server: servers, machineId, token: made.token, caSha256: made.caSha256, dataDir: dir("makina-agent-"), threads: 1, gpu: false, reconnectMinMs: 100, reconnectMaxMs: 2000 },
      }),
      { log: silentLogger(), adapters: { openai: fakeAdapter() } },
    );
    await agent.link.whenOnline();
    const holder = relays.find((r) => r.registry.get(machineId))!;
    const stack = await holder.control.createStack({ org: org.id, name: "stories", machine: machineId, runtime: "openai", model: "http://fake.invalid/v1#fake", modelId: "stories" });
    await holder.control.deploy(stack.id);
    await holder.deployer.settled(stack.id);
    key = (await holder.control.createKey(org.id, { name: "app" })).key;
  });
  afterAll(async () => {
    await agent?.stop();
    for (const r of relays) await r.stop();
    await nats?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("gets one install command naming every relay, and one CA fingerprint that holds for all of them", () => {
    const [a, b] = relays as [Relay, Relay];
    expect(a.linkCaSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(b.linkCaSha256).toBe(a.linkCaSha256);
    expect(installCommand).toContain(`--server ${a.linkAddress} --server ${b.linkAddress}`);
    expect(installCommand).toContain(`--ca-sha256 ${a.linkCaSha256}`);
  });

  it("links to the other relay when its relay stops, and its stack is served through it again within 5 s", async () => {
    // Served through both relays: one holds the link, the other reaches it over NATS.
    await vi.waitFor(async () => {
      for (const r of relays) expect((await chat(r)).status).toBe(200);
    }, { timeout: 10_000, interval: 100 });
    const holder = relays.find((r) => r.registry.get(machineId))!;
    const other = relays.find((r) => r !== holder)!;
    await holder.stop();
    await vi.waitFor(async () => {
      expect(other.registry.get(machineId)).toBeDefined();
      expect((await chat(other)).status).toBe(200);
    }, { timeout: 5000, interval: 50 });
    const machine = await other.control.machine(null, machineId);
    expect(machine.state).toBe("online");
  });
});
