import { describe, expect, it } from "vitest";
import type { MakinaError } from "../../proto/index.js";
import { RefusalBudget } from "../../relay/limits/index.js";

function clock(start = 6_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

const refusal = (fn: () => unknown): MakinaError => {
  try {
    fn();
  } catch (e) {
    return e as MakinaError;
  }
  throw new Error("expected a 429");
};

describe("refused requests, counted apart from a key's quota", () => {
  it("lets a limited key have its RPM in refusals a minute, then answers 429 with the time to wait", () => {
    const c = clock();
    const budget = new RefusalBudget(c.now);
    const key = { id: "k", rpm: 100, tpm: null };
    for (let i = 0; i < 100; i++) {
      expect(() => budget.check(key)).not.toThrow();
      budget.record(key, 404);
    }
    const e = refusal(() => budget.check(key));
    expect(e.code).toBe("rate_limit_requests");
    expect(e.message).toContain("100 requests refused in the last minute");
    // All 100 in this minute: they fade as the window moves past the start of the next one.
    expect(e.retryAfterMs).toBe(60_000);
    c.advance(60_000);
    expect(() => budget.check(key)).toThrow();
    c.advance(1_000);
    expect(() => budget.check(key)).not.toThrow();
  });

  it("gives a low-RPM key 60 refusals a minute, so its first typos do not lock it out", () => {
    const c = clock();
    const budget = new RefusalBudget(c.now);
    const key = { id: "k", rpm: 2, tpm: null };
    for (let i = 0; i < 60; i++) {
      budget.check(key);
      budget.record(key, 400);
    }
    expect(refusal(() => budget.check(key)).message).toContain("at most 60");
  });

  it("counts only refusals (400, 403, 404, 413, 415), never served, rate-limited or failed requests", () => {
    const c = clock();
    const budget = new RefusalBudget(c.now);
    const key = { id: "k", rpm: 60, tpm: null };
    for (const status of [200, 429, 499, 500, 503, 504]) for (let i = 0; i < 100; i++) budget.record(key, status);
    expect(budget.trackedKeys).toBe(0);
    for (const status of [400, 403, 404, 413, 415]) for (let i = 0; i < 12; i++) budget.record(key, status);
    expect(() => budget.check(key)).toThrow();
  });

  it("never counts a key without an RPM limit", () => {
    const budget = new RefusalBudget();
    const key = { id: "k", rpm: null, tpm: 1000 };
    for (let i = 0; i < 10_000; i++) budget.record(key, 404);
    expect(() => budget.check(key)).not.toThrow();
    expect(budget.trackedKeys).toBe(0);
  });

  it("forgets keys that went quiet, so memory follows the keys refused in the last two minutes", () => {
    const c = clock();
    const budget = new RefusalBudget(c.now);
    for (let i = 0; i < 1000; i++) budget.record({ id: `k${i}`, rpm: 10, tpm: null }, 404);
    expect(budget.trackedKeys).toBe(1000);
    c.advance(130_000);
    budget.record({ id: "late", rpm: 10, tpm: null }, 404);
    expect(budget.trackedKeys).toBe(1);
  });
});
