import { existsSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveRelayConfig } from "../../relay/index.js";
import { startRelay, type RelayInternals as Relay } from "../../relay/start/start-relay.js";
import { silentLogger } from "../../proto/index.js";
import { emptyDatabase } from "../helpers/databases.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";

/**
 * `makina relay --database postgres://…`: the whole relay (gateway, control plane, usage, sign-in) on a real
 * PostgreSQL server instead of the SQLite file. The models are the stand-in of test/fakes (what is tested
 * here is the relay's state, not inference).
 */
describe("a relay on PostgreSQL", () => {
  let gw: TestGateway;
  let database: string;
  const admin = (method: string, path: string, body?: unknown, relay: Relay = gw.relay) =>
    fetch(`${relay.adminUrl}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${relay.adminToken}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  beforeAll(async () => {
    const location = await emptyDatabase("postgres");
    database = location.kind === "postgres" ? location.url : "";
    gw = await startTestGateway({ runtime: "fake", relayFlags: { database } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("keeps its state there, not in a SQLite file, and serves the gateway from it", async () => {
    expect(gw.relay.store.dialect).toBe("postgres");
    expect(existsSync(join(gw.dataDir, "makina.db"))).toBe(false);
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(["stories"]);
    const answer = await client.chat.completions.create({ model: "stories", messages: [{ role: "user", content: "Once" }], max_tokens: 3 });
    expect(answer.choices[0]!.message.content).toEqual(expect.any(String));
  });

  it("holds a key made or revoked through the admin API for the very next request", async () => {
    const made = await admin("POST", "/keys", { org: gw.orgId, name: "fresh" });
    expect(made.status).toBe(201);
    const { id, key } = (await made.json()) as { id: string; key: string };
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: key, maxRetries: 0 });
    expect((await client.models.list()).data).toHaveLength(1);
    expect((await admin("POST", `/keys/${id}/revoke`)).status).toBe(200);
    await expect(client.models.list()).rejects.toMatchObject({ status: 401, code: "invalid_api_key" });
  });

  it("applies the organization's default limits to its keys on their next request", async () => {
    const { key } = (await (await admin("POST", "/keys", { org: gw.orgId, name: "inherits" })).json()) as { key: string };
    expect((await admin("PATCH", `/orgs/${gw.orgId}`, { default_key_rpm: 1 })).status).toBe(200);
    const chat = () =>
      fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "stories", messages: [{ role: "user", content: "Once" }], max_tokens: 2 }),
      });
    const first = await chat();
    expect([first.status, first.headers.get("x-ratelimit-limit-requests")]).toEqual([200, "1"]);
    expect((await chat()).status).toBe(429);
    expect((await admin("PATCH", `/orgs/${gw.orgId}`, { default_key_rpm: null })).status).toBe(200);
  });

  it("stops routing to an undeployed stack at once, and counts usage in the shared database", async () => {
    const stackId = await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: "second" });
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
    await client.chat.completions.create({ model: "second", messages: [{ role: "user", content: "Hi" }], max_tokens: 2 });
    expect((await admin("POST", `/stacks/${stackId}/undeploy`)).status).toBe(200);
    await expect(client.chat.completions.create({ model: "second", messages: [{ role: "user", content: "Hi" }], max_tokens: 2 })).rejects.toMatchObject({ status: 404 });
    const usage = (await (await admin("GET", `/usage?org=${gw.orgId}&by=model`)).json()) as { totals: { group: string; total: { requests: number } }[] };
    expect(usage.totals.find((t) => t.group === "second")?.total.requests).toBe(1);
  });

  it("finds everything again after a restart on the same database", async () => {
    const before = (await (await admin("GET", `/stacks?org=${gw.orgId}`)).json()) as { data: { id: string; state: string }[] };
    const config = gw.relay.config;
    await gw.relay.stop();
    const relay = await startRelay(resolveRelayConfig({ flags: { dataDir: config.dataDir, database, port: 0, grpcPort: 0, grpcHost: "127.0.0.1" } }), { log: silentLogger() });
    try {
      expect(relay.store.migrated).toBe(0);
      const after = (await (await admin("GET", `/stacks?org=${gw.orgId}`, undefined, relay)).json()) as { data: { id: string; state: string }[] };
      expect(after.data).toEqual(before.data.map((s) => expect.objectContaining({ id: s.id, state: s.state })));
      const models = await fetch(`${relay.url}/v1/models`, { headers: { authorization: `Bearer ${gw.apiKey}` } });
      expect(models.status).toBe(200);
      const machines = (await (await admin("GET", `/machines?org=${gw.orgId}`, undefined, relay)).json()) as { data: { id: string; state: string }[] };
      // No link to this relay yet: the machine is offline here until its agent dials it.
      expect(machines.data.map((m) => [m.id, m.state])).toEqual([[gw.machineId, "offline"]]);
    } finally {
      await relay.stop();
    }
  });
});
