import { afterEach, describe, expect, it } from "vitest";
import { openDatabase } from "../../relay/store/open-database.js";
import { UsageRecorder } from "../../relay/usage/index.js";

const HOUR = 3_600_000;

describe("usage recording", () => {
  const recorders: UsageRecorder[] = [];
  afterEach(() => {
    for (const r of recorders.splice(0)) r.close();
  });
  const recorder = (clock: { now: number }) => {
    const r = new UsageRecorder(openDatabase(":memory:"), { now: () => clock.now, flushIntervalMs: 60_000 });
    recorders.push(r);
    return r;
  };
  const sample = (keyId: string, model = "m", tokens = 10, failed = false) => ({ orgId: "org_a", keyId, model, promptTokens: tokens, completionTokens: tokens * 2, failed });

  it("sums requests, errors and tokens per key into hourly buckets of the last 24 hours", () => {
    const clock = { now: Date.UTC(2026, 10, 23, 12, 30) };
    const r = recorder(clock);
    r.record(sample("key_1"));
    r.record(sample("key_1", "m", 5, true));
    clock.now -= 3 * HOUR;
    r.record(sample("key_1"));
    clock.now -= 30 * HOUR; // outside the window
    r.record(sample("key_1"));
    clock.now += 33 * HOUR;
    const { series, totals, bucketMs } = r.series("org_a", "24h", "key");
    expect(bucketMs).toBe(HOUR);
    expect(series).toHaveLength(1);
    const points = series[0]!.points;
    expect(points).toHaveLength(24);
    expect(points.at(-1)).toMatchObject({ start: Date.UTC(2026, 10, 23, 12), requests: 2, errors: 1, promptTokens: 15, completionTokens: 30 });
    expect(points.at(-4)).toMatchObject({ start: Date.UTC(2026, 10, 23, 9), requests: 1 });
    expect(totals).toEqual([{ group: "key_1", total: { requests: 3, errors: 1, promptTokens: 25, completionTokens: 50 } }]);
    // Another organization's usage is not there.
    expect(r.series("org_b", "24h", "key").series).toEqual([]);
  });

  it("draws the busiest groups and folds the rest into one 'other' series, while totals list them all", () => {
    const clock = { now: Date.UTC(2026, 10, 23, 12) };
    const r = recorder(clock);
    for (let k = 0; k < 10; k++) for (let n = 0; n <= k; n++) r.record(sample(`key_${k}`, `model-${k % 2}`));
    const { series, totals } = r.series("org_a", "30d", "key", 8);
    expect(series.map((s) => s.group)).toEqual(["key_9", "key_8", "key_7", "key_6", "key_5", "key_4", "key_3", "key_2", "other"]);
    expect(series.at(-1)!.total.requests).toBe(1 + 2);
    expect(series.at(-1)!.points.at(-1)!.requests).toBe(3);
    expect(totals).toHaveLength(10);
    expect(r.series("org_a", "30d", "model").totals.map((t) => [t.group, t.total.requests])).toEqual([
      ["model-1", 2 + 4 + 6 + 8 + 10],
      ["model-0", 1 + 3 + 5 + 7 + 9],
    ]);
  });

  it("counts per key for the keys list, including what is not flushed yet", () => {
    const clock = { now: Date.UTC(2026, 10, 23, 12) };
    const r = recorder(clock);
    r.record(sample("key_1", "m", 10));
    r.record(sample("key_1", "m", 10));
    expect(r.totalsByKey("org_a", clock.now - 24 * HOUR).get("key_1")).toEqual({ requests: 2, tokens: 60 });
  });
});
