import Database from "better-sqlite3";
import { sql } from "kysely";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";

/** What a client and an operator see while the relay's database refuses writes: the gateway keeps serving. */
function faultChecks(gwOf: () => TestGateway) {
  const chat = (content: string) =>
    fetch(`${gwOf().baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gwOf().apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: gwOf().modelId, messages: [{ role: "user", content }] }),
    });
  const admin = (method: string, path: string, body?: unknown) =>
    fetch(`${gwOf().relay.url}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${gwOf().relay.adminToken}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const requestsCounted = async () => {
    const res = await admin("GET", `/usage?org=${gwOf().orgId}`);
    expect(res.status).toBe(200);
    return ((await res.json()) as { totals: { total: { requests: number } }[] }).totals.reduce((n, t) => n + t.total.requests, 0);
  };
  return { chat, admin, requestsCounted };
}

describe("a full disk (stand-in: the database capped at its size with max_page_count, which SQLite refuses as a full disk: SQLITE_FULL)", () => {
  let gw: TestGateway;
  let filler: Database.Database;
  const { chat, admin, requestsCounted } = faultChecks(() => gw);
  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake" });
    // A second connection fills the database up to its cap, as other files fill a disk.
    filler = new Database(join(gw.dataDir, "makina.db"));
    filler.pragma("busy_timeout = 2000");
  });
  afterAll(async () => {
    filler?.close();
    await gw?.close();
  });

  it("keeps serving requests, refuses admin writes with 503 storage_unavailable saying why, and loses no usage", async () => {
    const before = await requestsCounted();
    // The disk fills up: the database packed tight (VACUUM), capped at that size, and its keys and usage tables
    // filled with the smallest rows until SQLite refuses one, so that no row the relay writes there fits.
    // The relay's own connection is capped through its query builder (the cap is per connection).
    const relayDb = gw.relay.store.db;
    await sql.raw("VACUUM").execute(relayDb);
    const pages = (await sql<{ page_count: number }>`PRAGMA page_count`.execute(relayDb)).rows[0]!.page_count;
    filler.pragma(`max_page_count = ${pages}`);
    await sql.raw(`PRAGMA max_page_count = ${pages}`).execute(relayDb);
    const fill = (sql: string) => {
      const insert = filler.prepare(sql);
      for (let i = 0; ; i++) {
        try {
          insert.run(Array(insert.source.split("?").length - 1).fill(i));
        } catch (err) {
          expect((err as { code: string }).code, String(err)).toBe("SQLITE_FULL");
          return;
        }
      }
    };
    fill("INSERT INTO usage_minutes VALUES ('o', 'k', 'm', ?, 0, 0, 0, 0, 0, 0)");
    fill(`INSERT INTO api_keys (id, org_id, prefix, key_hash, created_at) VALUES ('f' || ?, '${gw.orgId}', 'p', 'h' || ?, 0)`);

    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => chat(`request ${i}`)));
    expect(answers.map((r) => r.status)).toEqual(Array(20).fill(200));
    await Promise.all(answers.map((r) => r.text()));

    const refused = await admin("POST", "/keys", { org: gw.orgId, name: "while-full" });
    expect([refused.status, refused.headers.get("retry-after")]).toEqual([503, "5"]);
    expect(((await refused.json()) as { error: unknown }).error).toEqual({
      message: "The relay cannot write to its database: the disk holding it is full (SQLITE_FULL). Nothing was changed; try again once it is fixed.",
      type: "service_unavailable_error",
      param: null,
      code: "storage_unavailable",
    });
    // Usage is counted in memory and written every few seconds: reading it writes first, which fails now, clearly.
    const usage = await admin("GET", `/usage?org=${gw.orgId}`);
    expect([usage.status, ((await usage.json()) as { error: { code: string } }).error.code]).toEqual([503, "storage_unavailable"]);
    const health = await fetch(`${gw.relay.url}/health`);
    expect([health.status, await health.json()]).toEqual([200, { status: "degraded", storage: "The relay cannot write to its database: the disk holding it is full (SQLITE_FULL)." }]);

    // Room again: the same write goes through, and every request served meanwhile is counted.
    await sql.raw("PRAGMA max_page_count = 1073741823").execute(relayDb);
    filler.pragma("max_page_count = 1073741823");
    expect((await admin("POST", "/keys", { org: gw.orgId, name: "after" })).status).toBe(201);
    expect(await requestsCounted()).toBe(before + 20);
  });
});

describe("a database another process holds locked (a second connection inside a write transaction)", () => {
  let gw: TestGateway;
  let other: Database.Database;
  const { chat, admin, requestsCounted } = faultChecks(() => gw);
  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake" });
    other = new Database(join(gw.dataDir, "makina.db"));
  });
  afterAll(async () => {
    if (other?.inTransaction) other.exec("ROLLBACK");
    other?.close();
    await gw?.close();
  });

  it("keeps serving requests, refuses admin writes with 503 storage_unavailable, and writes what it kept once the lock is gone", async () => {
    const before = await requestsCounted();
    other.exec("BEGIN IMMEDIATE");
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => chat(`request ${i}`)));
    expect(answers.map((r) => r.status)).toEqual(Array(10).fill(200));
    await Promise.all(answers.map((r) => r.text()));
    const refused = await admin("POST", "/keys", { org: gw.orgId, name: "while-locked" });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toBe(
      "The relay cannot write to its database: another process holds it locked (SQLITE_BUSY). Nothing was changed; try again once it is fixed.",
    );
    // Reads do not wait for the lock (WAL): the admin API still lists.
    expect((await admin("GET", `/stacks?org=${gw.orgId}`)).status).toBe(200);

    other.exec("COMMIT");
    expect((await admin("POST", "/keys", { org: gw.orgId, name: "after" })).status).toBe(201);
    expect(await requestsCounted()).toBe(before + 10);
  });
});
