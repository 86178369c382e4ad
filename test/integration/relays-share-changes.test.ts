import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { resolveRelayConfig } from "../../relay/index.js";
import { startRelay, type RelayInternals as Relay } from "../../relay/start/start-relay.js";
import { createLogger, silentLogger } from "../../proto/index.js";
import { emptyDatabase } from "../helpers/databases.js";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { sseEvents, WebClient } from "../helpers/web-client.js";
import { fakeAdapter } from "../fakes/fake-runtime.js";
import { resolveAgentConfig, startAgent } from "../../agent/index.js";

/** The lease of these relays: short, so a relay cut from the database stops serving within the test. */
const LEASE_MS = 1500;

/**
 * Two relays on one real PostgreSQL database: relay A (with an agent and a stack, the stand-in of test/fakes)
 * and relay B, whose every connection to the database runs through a TCP proxy the test can cut. A change
 * made through either must hold on the other for the next request after the admin API answered.
 */
describe("relays on one database", () => {
  let gw: TestGateway;
  let b: Relay;
  let bDir: string;
  let proxy: TcpProxy;
  let database: string;
  /** What relay B warned of, as its log's lines. */
  const bWarnings: Record<string, unknown>[] = [];
  const admin = async (relay: Relay, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${relay.adminUrl}/admin/v1${path}`, {
      method,
      // The deployment's admin token, made by relay A: every relay accepts it.
      headers: { authorization: `Bearer ${gw.relay.adminToken}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const models = (relay: Relay, key: string) => fetch(`${relay.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
  const newKey = async (relay: Relay, name: string) => {
    const made = await admin(relay, "POST", "/keys", { org: gw.orgId, name });
    expect(made.status).toBe(201);
    return made.body as { id: string; key: string };
  };

  beforeAll(async () => {
    const location = await emptyDatabase("postgres");
    database = location.kind === "postgres" ? location.url : "";
    gw = await startTestGateway({ runtime: "fake", relayFlags: { database, changeLeaseMs: LEASE_MS } });
    const url = new URL(database);
    proxy = await startTcpProxy(url.hostname, Number(url.port));
    url.host = `127.0.0.1:${proxy.port}`;
    bDir = mkdtempSync(join(tmpdir(), "makina-relay-b-"));
    // Relay B is given the secrets key relay A made (its data directory's), as an operator copies it.
    b = await startRelay(
      resolveRelayConfig({ flags: { dataDir: bDir, database: url.toString(), secretsKeyFile: join(gw.dataDir, "secrets.key"), changeLeaseMs: LEASE_MS, port: 0, grpcPort: 0, grpcHost: "127.0.0.1", drainTimeoutMs: 500 } }),
      { log: createLogger({ level: "warn", write: (line) => void bWarnings.push(JSON.parse(line) as Record<string, unknown>) }) },
    );
  });
  afterAll(async () => {
    await b?.stop();
    await gw?.close();
    await proxy?.close();
    if (bDir) rmSync(bDir, { recursive: true, force: true });
  });

  it("each hold a key made or revoked through the other on the very next request, every time", async () => {
    for (let i = 0; i < 15; i++) {
      const [writer, reader] = i % 2 === 0 ? [gw.relay, b] : [b, gw.relay];
      const { id, key } = await newKey(writer, `race-${i}`);
      expect((await models(reader, key)).status).toBe(200);
      expect((await admin(writer, "POST", `/keys/${id}/revoke`)).status).toBe(200);
      const refused = await models(reader, key);
      expect(refused.status).toBe(401);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("invalid_api_key");
    }    // A block, an unblock and a new secret (the old one stopping at once) hold on the other relay's next request too.
    const { id, key } = await newKey(gw.relay, "paused");
    expect((await admin(gw.relay, "POST", `/keys/${id}/block`)).status).toBe(200);
    expect((await models(b, key)).status).toBe(401);
    expect((await admin(b, "POST", `/keys/${id}/unblock`)).status).toBe(200);
    expect((await models(gw.relay, key)).status).toBe(200);
    const made = (await admin(gw.relay, "POST", `/keys/${id}/regenerate`, {})).body as { key: string };
    expect([(await models(b, key)).status, (await models(b, made.key)).status]).toEqual([401, 200]);
  });

  it("applies an organization's default limits and an undeploy made through the other relay to the next request", async () => {
    const { key } = await newKey(gw.relay, "inherits");
    expect((await admin(b, "PATCH", `/orgs/${gw.orgId}`, { default_key_rpm: 7 })).status).toBe(200);
    expect((await models(gw.relay, key)).headers.get("x-ratelimit-limit-requests")).toBe("7");
    expect((await admin(gw.relay, "PATCH", `/orgs/${gw.orgId}`, { default_key_rpm: null })).status).toBe(200);
    expect((await models(b, key)).headers.get("x-ratelimit-limit-requests")).toBeNull();
    // A budget set through one relay holds on the other from its next request; without Redis each counts it on its own, said in /health.
    expect((await admin(b, "PATCH", `/orgs/${gw.orgId}`, { budget: { tokens: 1_000_000, period: "month" } })).status).toBe(200);
    expect(Number((await models(gw.relay, key)).headers.get("x-budget-remaining-tokens"))).toBeGreaterThan(0);
    expect(await (await fetch(`${gw.relay.url}/health`)).json()).toMatchObject({ status: "degraded", budgets: expect.stringMatching(/^token budgets are counted by each relay on its own/) });
    expect((await admin(gw.relay, "PATCH", `/orgs/${gw.orgId}`, { budget: null })).status).toBe(200);
    expect((await models(b, key)).headers.get("x-budget-remaining-tokens")).toBeNull();
    expect(await (await fetch(`${b.url}/health`)).json()).toEqual({ status: "ok" });

    const stackId = await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: "second" });
    const listed = async (relay: Relay) => ((await (await models(relay, gw.apiKey)).json()) as { data: { id: string }[] }).data.map((m) => m.id).sort();
    expect(await listed(b)).toEqual(["second", "stories"]);
    expect((await admin(b, "POST", `/stacks/${stackId}/undeploy`)).status).toBe(200);
    expect(await listed(b)).toEqual(["stories"]);
    expect(await listed(gw.relay)).toEqual(["stories"]);
  });

  it("stops a user disabled through one relay on the other at once: its keys, its session and its live event stream", async () => {
    const password = "correct horse battery";
    const user = await admin(gw.relay, "POST", "/users", { org: gw.orgId, login: `roamer-${Date.now()}@example.com`, role: "member", password });
    expect(user.status).toBe(201);
    const web = new WebClient(b.url);
    expect((await web.signIn(user.body.login as string, password)).status).toBe(200);
    const key = (await web.json<{ key: string }>("POST", "/admin/v1/keys", { name: "roaming" })).key;
    const stream = await web.call("GET", "/admin/v1/events");
    const events = sseEvents(stream);
    expect((await models(b, key)).status).toBe(200);

    expect((await admin(gw.relay, "PATCH", `/users/${user.body.id as string}`, { disabled: true })).status).toBe(200);
    expect((await models(b, key)).status).toBe(401);
    expect((await web.call("GET", "/admin/v1/keys")).status).toBe(401);
    expect((await events.next()).done).toBe(true);

    expect((await admin(b, "PATCH", `/users/${user.body.id as string}`, { disabled: false })).status).toBe(200);
    expect((await models(gw.relay, key)).status).toBe(200);
    expect((await models(b, key)).status).toBe(200);
  });

  it("counts failed sign-ins on both relays together: guesses spread over them are held back as on one", async () => {
    const login = `guessed-${Date.now()}@example.com`;
    expect((await admin(b, "POST", "/users", { org: gw.orgId, login, role: "member", password: "the right password" })).status).toBe(201);
    const signIn = (relay: Relay, password: string) =>
      fetch(`${relay.url}/auth/v1/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ login, password }) }).then((r) => r.status);
    // Five guesses from this address, alternating between the relays: each relay saw fewer than five.
    for (let i = 0; i < 5; i++) expect(await signIn(i % 2 ? b : gw.relay, `guess ${i}`)).toBe(401);
    // Either relay now holds the login back from this address, the right password included.
    expect(await signIn(gw.relay, "the right password")).toBe(429);
    expect(await signIn(b, "the right password")).toBe(429);
  });

  it("ends a machine's link on the relay holding it when the machine is revoked through another", async () => {
    const { machineId } = await gw.addMachine(gw.orgId);
    expect(gw.relay.registry.get(machineId)).toBeDefined();
    expect((await admin(b, "POST", `/machines/${machineId}/revoke`)).status).toBe(200);
    // Dropped by relay A before it confirmed the change to B; its agent cannot link again.
    expect(gw.relay.registry.get(machineId)).toBeUndefined();
    const machine = await admin(gw.relay, "GET", `/machines/${machineId}`);
    expect(machine.body).toMatchObject({ state: "offline", revoked_at: expect.any(Number) });
  });

  it("accept one admin token, made by the first relay; the second has none of its own", async () => {
    expect(gw.relay.adminToken).toMatch(/^mk_admin_/);
    expect(b.adminToken).toBeNull();
    expect(existsSync(join(bDir, "admin-token"))).toBe(false);
    expect((await admin(b, "GET", "/orgs")).status).toBe(200);
    const wrong = await fetch(`${b.adminUrl}/admin/v1/orgs`, { headers: { authorization: "Bearer mk_admin_not-the-deployments" } });
    expect(wrong.status).toBe(401);
  });

  it("lists every relay running on the database, and forgets one that stopped", async () => {
    const sql = new pg.Client({ connectionString: database });
    await sql.connect();
    try {
      const rows = (await sql.query<{ url: string; link_address: string }>("SELECT url, link_address FROM relays ORDER BY started_at")).rows;
      expect(rows).toEqual(
        expect.arrayContaining([
          { url: gw.relay.url, link_address: gw.relay.linkAddress },
          { url: b.url, link_address: b.linkAddress },
        ]),
      );
      // A machine left online by a relay that died without a word (its row never renewed again).
      const made = await admin(gw.relay, "POST", "/machines", { org: gw.orgId, name: "on-a-dead-relay" });
      const orphan = (made.body as { id: string }).id;
      await sql.query("INSERT INTO relays (id, started_at, seen_at, lease_ms) VALUES ('rly_dead', 0, 0, 10000)");
      await sql.query("UPDATE machines SET state = 'online', relay_id = 'rly_dead' WHERE id = $1", [orphan]);
      const dir = mkdtempSync(join(tmpdir(), "makina-relay-c-"));
      try {
        const c = await startRelay(resolveRelayConfig({ flags: { dataDir: dir, database, secretsKeyFile: join(gw.dataDir, "secrets.key"), changeLeaseMs: LEASE_MS, port: 0, grpcPort: 0, grpcHost: "127.0.0.1" } }), { log: silentLogger() });
        expect((await sql.query("SELECT 1 FROM relays WHERE url = $1", [c.url])).rowCount).toBe(1);
        // Looked for by every relay, at its start too: shown offline, and the relay forgotten after an hour.
        expect((await admin(c, "GET", `/machines/${orphan}`)).body).toMatchObject({ state: "offline" });
        expect((await sql.query("SELECT 1 FROM relays WHERE id = 'rly_dead'")).rowCount).toBe(0);
        // The machines linked to living relays stay online.
        expect((await admin(c, "GET", `/machines/${gw.machineId}`)).body).toMatchObject({ state: "online" });
        await c.stop();
        expect((await sql.query("SELECT 1 FROM relays WHERE url = $1", [c.url])).rowCount).toBe(0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    } finally {
      await sql.end();
    }
  });

  it("a relay cut from the database refuses requests rather than serve a key revoked meanwhile, and catches up by itself", async () => {
    const { id, key } = await newKey(gw.relay, "revoked-while-cut");
    expect((await models(b, key)).status).toBe(200);
    // A machine linked to B, revoked through A while B cannot hear.
    const made = (await admin(gw.relay, "POST", "/machines", { org: gw.orgId, name: "linked-to-b" })).body as { id: string; token: string };
    const agentDir = mkdtempSync(join(tmpdir(), "makina-agent-b-"));
    const agent = await startAgent(
      resolveAgentConfig({ flags: { server: b.linkAddress, machineId: made.id, token: made.token, dataDir: agentDir, threads: 1, gpu: false, reconnectMinMs: 50, reconnectMaxMs: 500 } }),
      { log: silentLogger(), adapters: { openai: fakeAdapter() } },
    );
    await agent.link.whenOnline();
    expect(b.registry.get(made.id)).toBeDefined();
    proxy.cut();
    expect((await admin(gw.relay, "POST", `/machines/${made.id}/revoke`)).status).toBe(200);
    // Relay A's answer waits until B confirmed the change or B's lease ran out; B never heard of it.
    expect((await admin(gw.relay, "POST", `/keys/${id}/revoke`)).status).toBe(200);
    const refused = await models(b, key);
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toEqual(expect.any(String));
    expect(((await refused.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: "storage_unavailable",
      message: expect.stringMatching(/change feed/),
    });
    // Every key, not only that one: B cannot know what else changed.
    expect((await models(b, gw.apiKey)).status).toBe(503);
    const health = await fetch(`${b.url}/health`);
    expect(health.status).toBe(503);
    expect(await health.json()).toMatchObject({ status: "unavailable", changes: expect.any(String) });
    // Relay A serves on.
    expect((await models(gw.relay, gw.apiKey)).status).toBe(200);

    proxy.restore();
    await vi.waitFor(async () => expect((await models(b, gw.apiKey)).status).toBe(200), { timeout: 10_000, interval: 100 });
    expect((await models(b, key)).status).toBe(401);
    expect((await fetch(`${b.url}/health`)).status).toBe(200);
    // B looked at the machines it links once it caught up: the revoked one has no link there any more.
    await vi.waitFor(() => expect(b.registry.get(made.id)).toBeUndefined(), { timeout: 5000, interval: 50 });
    await agent.stop();
    rmSync(agentDir, { recursive: true, force: true });
  });

  it("takes a change's confirmation from relays only: acknowledgements forged by another client of the database are dropped, and the writer waits on", async () => {
    // A relay that never answers, seen a moment ago: relay B's next write waits for it until its lease runs out.
    const seenAt = Date.now();
    await b.store.db.insertInto("relays").values({ id: "rly_ghost", url: null, link_address: null, started_at: seenAt, seen_at: seenAt, lease_ms: 300 }).execute();
    // Another client of the database: it hears B's barrier and answers it at once, in the ghost's name.
    const rogue = new pg.Client({ connectionString: database });
    await rogue.connect();
    const bId = (await rogue.query<{ id: string }>("SELECT id FROM relays WHERE url = $1", [b.url])).rows[0]!.id;
    const forged: string[] = [];
    rogue.on("notification", (m) => {
      const [kind, writer, n] = (m.payload ?? "").split(":");
      if (kind !== "barrier" || writer !== bId) return;
      for (const payload of [`ack:rly_ghost:${n}`, `ack:rly_ghost:${n}:AAAAAAAAAAAAAAAAAAAAAA`]) {
        forged.push(payload);
        void rogue.query("SELECT pg_notify($1, $2)", [`makina_relay_${writer}`, payload]);
      }
    });
    await rogue.query("LISTEN makina_changes");
    bWarnings.length = 0;
    try {
      await newKey(b, "forged-ack");
      expect(forged.length).toBe(2);
      // The ghost's confirmation never came: the writer waited for it, and says so.
      const said = bWarnings.map((w) => [w.msg, w.relays]);
      expect(said).toContainEqual(["relays did not confirm a change in time; they have stopped serving from memory by now", ["rly_ghost"]]);
      expect(said).toContainEqual(["dropped a change-feed acknowledgement not tagged by a relay of this database (another client of the database sent it)", undefined]);
    } finally {
      await rogue.end();
      await b.store.db.deleteFrom("relays").where("id", "=", "rly_ghost").execute();
    }
  });

  it("refuses to start while a relay of the release before (one relay per database) still runs on it", async () => {
    const older = new pg.Client({ connectionString: database });
    await older.connect();
    const dir = mkdtempSync(join(tmpdir(), "makina-relay-new-"));
    try {
      // What a relay of that release held while it ran.
      const other = await emptyDatabase("postgres");
      const url = other.kind === "postgres" ? other.url : "";
      const holder = new pg.Client({ connectionString: url });
      await holder.connect();
      await holder.query("SELECT pg_advisory_lock(7247031196208271002)");
      const start = startRelay(resolveRelayConfig({ flags: { dataDir: dir, database: url, changeLeaseMs: LEASE_MS, port: 0, grpcPort: 0, grpcHost: "127.0.0.1" } }), { log: silentLogger() });
      await expect(start).rejects.toThrow(/A relay of an older Makina runs on this PostgreSQL database/);
      await holder.end();
      // Gone: this release's relays start, and the older one could no longer (they hold the lock shared).
      const relay = await startRelay(resolveRelayConfig({ flags: { dataDir: dir, database: url, changeLeaseMs: LEASE_MS, port: 0, grpcPort: 0, grpcHost: "127.0.0.1" } }), { log: silentLogger() });
      const { rows } = await older.query<{ held: boolean }>("SELECT pg_try_advisory_lock(7247031196208271002) AS held");
      expect(rows[0]!.held).toBe(false);
      await relay.stop();
    } finally {
      await older.end();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
