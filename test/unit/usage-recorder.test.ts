import { afterEach, describe, expect, it, vi } from "vitest";
import { openStore, type Store } from "../../relay/store/index.js";
import { UsageRecorder } from "../../relay/usage/index.js";
import { DIALECTS, emptyDatabase } from "../helpers/databases.js";

const HOUR = 3_600_000;

describe.each(DIALECTS)("usage recording on %s", (dialect) => {
  const open: { recorder: UsageRecorder; store: Store }[] = [];
  afterEach(async () => {
    for (const { recorder, store } of open.splice(0)) {
      await recorder.close();
      await store.close();
    }
  });
  const recorder = async (clock: { now: number }) => {
    const store = await openStore(await emptyDatabase(dialect));
    const r = new UsageRecorder(store.db, { now: () => clock.now, flushIntervalMs: 60_000 });
    open.push({ recorder: r, store });
    return r;
  };
  const sample = (keyId: string, model = "m", tokens = 10, failed = false) => ({ orgId: "org_a", keyId, model, promptTokens: tokens, completionTokens: tokens * 2, failed });

  it("sums requests, errors and tokens per key into hourly buckets of the last 24 hours", async () => {
    const clock = { now: Date.UTC(2026, 10, 23, 12, 30) };
    const r = await recorder(clock);
    r.record({ ...sample("key_1"), tier: "priority" });
    r.record({ ...sample("key_1", "m", 5, true), tier: "flex" });
    clock.now -= 3 * HOUR;
    r.record(sample("key_1"));
    clock.now -= 30 * HOUR; // outside the window
    r.record(sample("key_1"));
    clock.now += 33 * HOUR;
    const { series, totals, bucketMs } = await r.series("org_a", "24h", "key");
    expect(bucketMs).toBe(HOUR);
    expect(series).toHaveLength(1);
    const points = series[0]!.points;
    expect(points).toHaveLength(24);
    expect(points.at(-1)).toMatchObject({ start: Date.UTC(2026, 10, 23, 12), requests: 2, errors: 1, promptTokens: 15, completionTokens: 30, priorityRequests: 1, flexRequests: 1 });
    expect(points.at(-4)).toMatchObject({ start: Date.UTC(2026, 10, 23, 9), requests: 1 });
    expect(totals).toEqual([{ group: "key_1", total: { requests: 3, errors: 1, promptTokens: 25, completionTokens: 50, priorityRequests: 1, flexRequests: 1 } }]);
    // Another organization's usage is not there.
    expect((await r.series("org_b", "24h", "key")).series).toEqual([]);
  });

  it("draws the busiest groups and folds the rest into one 'other' series, while totals list them all", async () => {
    const clock = { now: Date.UTC(2026, 10, 23, 12) };
    const r = await recorder(clock);
    for (let k = 0; k < 10; k++) for (let n = 0; n <= k; n++) r.record(sample(`key_${k}`, `model-${k % 2}`));
    // Two days earlier: one request of a key that folds into "other", and one of the busiest.
    const today = clock.now;
    clock.now = today - 2 * 86_400_000;
    r.record(sample("key_0", "model-0"));
    r.record(sample("key_9", "model-1"));
    clock.now = today;
    const { series, totals, groups } = await r.series("org_a", "30d", "key", { top: 8 });
    expect(series.map((s) => s.group)).toEqual(["key_9", "key_8", "key_7", "key_6", "key_5", "key_4", "key_3", "key_2", "other"]);
    // "other", bucket by bucket: today key_0 and key_1 (1 + 2), two days ago key_0 (1); key_9's day is its own.
    expect(series.at(-1)!.total.requests).toBe(1 + 2 + 1);
    expect(series.at(-1)!.points.at(-1)!.requests).toBe(3);
    expect(series.at(-1)!.points.at(-3)!.requests).toBe(1);
    expect(series.at(-1)!.points.filter((p) => p.requests !== 0)).toHaveLength(2);
    expect(series[0]!.points.at(-1)).toMatchObject({ requests: 10, completionTokens: 10 * sample("", "").completionTokens });
    expect([series[0]!.points.at(-3)!.requests, series[0]!.total.requests]).toEqual([1, 11]);
    expect([totals.length, groups]).toEqual([10, 10]);
    // However many groups, the totals list the busiest and fold the rest into 'other', counted.
    const few = await r.series("org_a", "30d", "key", { top: 2, listed: 3 });
    expect(few.totals.map((t) => [t.group, t.total.requests])).toEqual([
      ["key_9", 11],
      ["key_8", 9],
      ["key_7", 8],
      ["other", 2 + 2 + 3 + 4 + 5 + 6 + 7],
    ]);
    expect(few.groups).toBe(10);
    expect(few.series.map((s) => [s.group, s.total.requests])).toEqual([
      ["key_9", 11],
      ["key_8", 9],
      ["other", 2 + 2 + 3 + 4 + 5 + 6 + 7 + 8],
    ]);
    expect((await r.series("org_a", "30d", "model")).totals.map((t) => [t.group, t.total.requests])).toEqual([
      ["model-1", 2 + 4 + 6 + 8 + 10 + 1],
      ["model-0", 1 + 3 + 5 + 7 + 9 + 1],
    ]);
  });

  /** Each key's requests and tokens of the last day, as the usage page's totals give them. */
  const perKey = async (r: UsageRecorder) =>
    new Map((await r.series("org_a", "24h", "key", { listed: 5000 })).totals.map((t) => [t.group, { requests: t.total.requests, tokens: t.total.promptTokens + t.total.completionTokens }]));

  it("counts per key, including what is not flushed yet", async () => {
    const clock = { now: Date.UTC(2026, 10, 23, 12) };
    const r = await recorder(clock);
    r.record(sample("key_1", "m", 10));
    r.record(sample("key_1", "m", 10));
    expect((await perKey(r)).get("key_1")).toEqual({ requests: 2, tokens: 60 });
  });

  it("writes 1,200 keys' counts in a few statements, adding to the rows already written", async () => {
    const clock = { now: Date.UTC(2026, 10, 23, 12) };
    const r = await recorder(clock);
    const keys = Array.from({ length: 1200 }, (_, i) => `key_${i}`);
    for (const k of keys) r.record(sample(k, "m", 1));
    await r.flush();
    const store = open.at(-1)!.store;
    // Every executor of the database (a transaction's too) runs its statements through this one method.
    const statements = vi.spyOn(Object.getPrototypeOf(store.db.getExecutor()) as { executeQuery: () => unknown }, "executeQuery");
    for (const k of keys) r.record(sample(k, "m", 1));
    r.record(sample("key_7", "m", 1, true));
    await r.flush();
    // Three inserts of at most 500 rows.
    expect(statements.mock.calls.length).toBe(3);
    statements.mockRestore();
    const totals = await perKey(r);
    expect(totals.size).toBe(1200);
    expect([totals.get("key_0"), totals.get("key_7"), totals.get("key_1199")]).toEqual([
      { requests: 2, tokens: 6 },
      { requests: 3, tokens: 9 },
      { requests: 2, tokens: 6 },
    ]);
  });
});

describe("usage counted by several relays on one database", () => {
  it("adds up every relay's counts", async () => {
    const location = await emptyDatabase("postgres");
    const [a, b] = [await openStore(location), await openStore(location)];
    const clock = { now: Date.UTC(2026, 10, 23, 12) };
    const [ra, rb] = [a, b].map((s) => new UsageRecorder(s.db, { now: () => clock.now, flushIntervalMs: 60_000 }));
    try {
      // Each relay's rows, and each one's tiers, added to the same row (the tier counts too).
      for (let i = 0; i < 3; i++) ra!.record({ orgId: "org_a", keyId: "key_1", model: "m", promptTokens: 1, completionTokens: 1, failed: false, tier: i === 0 ? "priority" : "flex" });
      await ra!.flush();
      for (let i = 0; i < 4; i++) rb!.record({ orgId: "org_a", keyId: "key_1", model: "m", promptTokens: 1, completionTokens: 1, failed: i === 0, tier: i < 2 ? "flex" : "priority" });
      await rb!.flush();
      const totals = (await ra!.series("org_a", "24h", "key")).totals;
      expect(totals).toEqual([{ group: "key_1", total: { requests: 7, errors: 1, promptTokens: 7, completionTokens: 7, priorityRequests: 3, flexRequests: 4 } }]);
    } finally {
      await ra!.close();
      await rb!.close();
      await a.close();
      await b.close();
    }
  });
});
