import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createTestDatabase, startPostgres, type PostgresServer } from "../helpers/postgres-server.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";

/**
 * PostgreSQL restarted under a relay: a PostgreSQL server of this file's own (the run's shared one serves the
 * other files), shut down with its fast shutdown and started again on the same data and port. The models are
 * the stand-in of test/fakes.
 */
describe("a relay on PostgreSQL while PostgreSQL restarts", () => {
  let server: PostgresServer;
  let gw: TestGateway;
  const admin = (method: string, path: string, body?: unknown) =>
    fetch(`${gw.relay.adminUrl}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${gw.relay.adminToken}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const ask = (apiKey: string) =>
    new OpenAI({ baseURL: gw.baseURL, apiKey, maxRetries: 0 }).chat.completions.create({ model: "stories", messages: [{ role: "user", content: "Once" }], max_tokens: 2 });

  beforeAll(async () => {
    server = await startPostgres();
    gw = await startTestGateway({ runtime: "fake", relayFlags: { database: await createTestDatabase(server.url) } });
  });
  afterAll(async () => {
    await gw?.close();
    await server?.stop();
  });

  it("keeps serving from memory, refuses admin writes with 503 storage_unavailable, then resumes by itself with nothing lost", async () => {
    expect((await ask(gw.apiKey)).choices[0]!.message.content).toEqual(expect.any(String));
    await server.pause();

    // The gateway reads only memory: requests are served as before.
    expect((await ask(gw.apiKey)).choices[0]!.message.content).toEqual(expect.any(String));
    const models = await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${gw.apiKey}` } });
    expect(models.status).toBe(200);
    // Admin writes are refused, saying why, with nothing changed.
    const refused = await admin("POST", "/keys", { org: gw.orgId, name: "while-down" });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: "storage_unavailable",
      message: expect.stringMatching(/^The relay cannot write to its database: .*PostgreSQL/),
    });
    expect(await (await fetch(`${gw.relay.url}/health`)).json()).toMatchObject({ status: "degraded", storage: expect.any(String) });

    await server.resume();
    // No restart of the relay: its pool replaces the connections that died.
    let made: { key: string } | undefined;
    await vi.waitFor(
      async () => {
        const res = await admin("POST", "/keys", { org: gw.orgId, name: "after-restart" });
        expect(res.status).toBe(201);
        made = (await res.json()) as { key: string };
      },
      { timeout: 20_000, interval: 250 },
    );
    expect((await ask(made!.key)).choices[0]!.message.content).toEqual(expect.any(String));
    // The usage counted while PostgreSQL was down was kept and written: all three requests are there.
    await vi.waitFor(
      async () => {
        const usage = (await (await admin("GET", `/usage?org=${gw.orgId}&by=model`)).json()) as { totals: { group: string; total: { requests: number } }[] };
        expect(usage.totals.find((t) => t.group === "stories")?.total.requests).toBe(3);
      },
      { timeout: 20_000, interval: 250 },
    );
    const keys = (await (await admin("GET", `/keys?org=${gw.orgId}`)).json()) as { data: { name: string }[] };
    expect(keys.data.map((k) => k.name)).not.toContain("while-down");
  });
});
