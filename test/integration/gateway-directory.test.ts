import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { relayPaths } from "../../relay/index.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";

/** Runs SQL on the relay's database from another process, as an operator's tool or a second program would. */
function writeFromAnotherProcess(database: string, sql: string, ...params: string[]): void {
  const script = `const D = require("better-sqlite3"); const db = new D(process.argv[1]); db.prepare(process.argv[2]).run(...process.argv.slice(3)); db.close();`;
  execFileSync(process.execPath, ["-e", script, database, sql, ...params], { cwd: process.cwd() });
}

// The gateway keeps keys and routes in memory; these tests prove a change made anywhere holds for the very next request.
describe("the gateway's keys and routes stay current", () => {
  let gw: TestGateway;
  const chat = (key: string, model: string) =>
    fetch(`${gw.relay.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model, messages: [{ role: "user", content: "Once" }], max_tokens: 2 }),
    });

  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("refuses a key revoked by another process writing the database, on the very next request", async () => {
    const { key, record } = await gw.relay.control.keys.create(OP, gw.orgId, { name: "outside" });
    expect((await chat(key, gw.modelId)).status).toBe(200);
    expect((await chat(key, gw.modelId)).status).toBe(200);
    writeFromAnotherProcess(relayPaths(gw.dataDir).database, "UPDATE api_keys SET state = 'revoked', revoked_at = 1 WHERE id = ?", record.id);
    const res = await chat(key, gw.modelId);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("invalid_api_key");
  });

  it("answers 503 rather than serve a key another process revoked, while the database cannot be read back, then 401", async () => {
    const { key, record } = await gw.relay.control.keys.create(OP, gw.orgId, { name: "outside-unreadable" });
    expect((await chat(key, gw.modelId)).status).toBe(200);
    const keys = gw.relay.store.keys;
    const listActive = keys.listActive.bind(keys);
    // The reload that the other process's commit calls for fails, as a database held locked would refuse it.
    let failing = true;
    keys.listActive = async () => {
      if (failing) throw Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" });
      return listActive();
    };
    try {
      writeFromAnotherProcess(relayPaths(gw.dataDir).database, "UPDATE api_keys SET state = 'revoked', revoked_at = 1 WHERE id = ?", record.id);
      // Requests at once: none is served from what may be stale.
      const [first, second] = await Promise.all([chat(key, gw.modelId), chat(key, gw.modelId)]);
      expect([first.status, second.status]).toEqual([503, 503]);
      expect(((await first.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: "storage_unavailable", message: expect.stringContaining("another process holds it locked") });
      const models = await fetch(`${gw.relay.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
      expect(models.status).toBe(503);
      failing = false;
      expect((await chat(key, gw.modelId)).status).toBe(401);
    } finally {
      keys.listActive = listActive;
    }
  });

  it("refuses a key revoked through the admin API on the very next request", async () => {
    const { key, record } = await gw.relay.control.keys.create(OP, gw.orgId, { name: "admin-revoked" });
    expect((await chat(key, gw.modelId)).status).toBe(200);
    const revoked = await fetch(`${gw.relay.url}/admin/v1/keys/${record.id}/revoke`, { method: "POST", headers: { authorization: `Bearer ${gw.relay.adminToken}` } });
    expect(revoked.status).toBe(200);
    expect((await chat(key, gw.modelId)).status).toBe(401);
  });

  it("stops routing to a stack another process took out of service, and routes again once it is back", async () => {
    const modelId = "moved-model";
    const stackId = await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId });
    expect((await chat(gw.apiKey, modelId)).status).toBe(200);
    writeFromAnotherProcess(relayPaths(gw.dataDir).database, "UPDATE stacks SET state = 'draft' WHERE id = ?", stackId);
    const gone = await chat(gw.apiKey, modelId);
    expect(gone.status).toBe(404);
    expect(((await gone.json()) as { error: { code: string } }).error.code).toBe("model_not_found");
    writeFromAnotherProcess(relayPaths(gw.dataDir).database, "UPDATE stacks SET state = 'deployed' WHERE id = ?", stackId);
    expect((await chat(gw.apiKey, modelId)).status).toBe(200);
  });

  it("applies a key's new limit written by another process on its next request", async () => {
    const { key, record } = await gw.relay.control.keys.create(OP, gw.orgId, { name: "limited-later" });
    expect((await chat(key, gw.modelId)).status).toBe(200);
    writeFromAnotherProcess(relayPaths(gw.dataDir).database, "UPDATE api_keys SET rpm = 1 WHERE id = ?", record.id);
    const first = await chat(key, gw.modelId);
    expect(first.status).toBe(200);
    expect(first.headers.get("x-ratelimit-limit-requests")).toBe("1");
    expect((await chat(key, gw.modelId)).status).toBe(429);
  });
});
