import { describe, expect, it } from "vitest";
import { MakinaError } from "../../proto/index.js";
import { estimateTokens, formatDuration, RateLimiter } from "../../relay/limits/index.js";

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return e as MakinaError;
  }
  throw new Error("expected a 429");
};

describe("per-key rate limits", () => {
  it("admits rpm requests in any 60 seconds, then says when to retry", () => {
    const c = clock();
    const limiter = new RateLimiter(c.now);
    const key = { id: "k", rpm: 3, tpm: null };
    for (let i = 0; i < 3; i++) {
      limiter.admit(key, 10);
      c.advance(10_000);
    }
    const e = refusal(() => limiter.admit(key, 10));
    expect(e.code).toBe("rate_limit_requests");
    expect(e.retryAfterMs).toBe(30_000);
    expect(limiter.headers(key)).toEqual({ "x-ratelimit-limit-requests": "3", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "50s" });
    c.advance(30_000);
    expect(() => limiter.admit(key, 10)).not.toThrow();
  });

  it("admits on the token estimate, then charges what was really used", () => {
    const c = clock();
    const limiter = new RateLimiter(c.now);
    const key = { id: "k", rpm: null, tpm: 100 };
    const a = limiter.admit(key, 80);
    expect(refusal(() => limiter.admit(key, 30)).code).toBe("rate_limit_tokens");
    a.settle(20);
    expect(limiter.headers(key)["x-ratelimit-remaining-tokens"]).toBe("80");
    expect(() => limiter.admit(key, 30)).not.toThrow();
  });

  it("charges a request that outlived the window when it ends, in the window current then", () => {
    const c = clock();
    const limiter = new RateLimiter(c.now);
    const key = { id: "k", rpm: 10, tpm: 1000 };
    const long = limiter.admit(key, 600);
    c.advance(70_000);
    long.settle(50_000);
    const e = refusal(() => limiter.admit(key, 100));
    expect(e.code).toBe("rate_limit_tokens");
    expect(e.retryAfterMs).toBe(60_000);
    expect(limiter.headers(key)["x-ratelimit-remaining-tokens"]).toBe("0");
    // The late charge is tokens only: it does not count as a request.
    expect(limiter.headers(key)["x-ratelimit-remaining-requests"]).toBe("10");
    c.advance(60_001);
    expect(() => limiter.admit(key, 100)).not.toThrow();
    expect(limiter.trackedKeys).toBe(1);
    c.advance(60_001);
    limiter.admit({ id: "other", rpm: 1, tpm: null }, 1);
    expect(limiter.headers(key)["x-ratelimit-remaining-tokens"]).toBe("1000");
  });

  it("refuses a request that could never fit the token limit", () => {
    const limiter = new RateLimiter();
    const e = refusal(() => limiter.admit({ id: "k", rpm: null, tpm: 50 }, 51));
    expect(e.code).toBe("rate_limit_tokens");
    expect(e.message).toContain("Request too large");
  });

  it("gives everything back on refund, whether it comes before or after a settle", () => {
    const limiter = new RateLimiter();
    const key = { id: "k", rpm: 2, tpm: 100 };
    const a = limiter.admit(key, 60);
    a.refund();
    a.settle(100);
    const b = limiter.admit(key, 60);
    b.settle(30);
    b.refund();
    expect(limiter.headers(key)).toMatchObject({ "x-ratelimit-remaining-requests": "2", "x-ratelimit-remaining-tokens": "100" });
  });

  it("keeps exact totals however busy a key is, and forgets keys that went quiet", () => {
    const c = clock();
    const limiter = new RateLimiter(c.now);
    const busy = { id: "busy", rpm: 100_000, tpm: 10_000_000 };
    const admissions = [];
    for (let i = 0; i < 50_000; i++) {
      admissions.push(limiter.admit(busy, 10));
      if (i % 100 === 0) c.advance(100);
    }
    // Half refunded, a tenth settled at 1 token: the totals follow exactly.
    admissions.forEach((a, i) => (i % 2 ? a.refund() : i % 10 === 0 ? a.settle(1) : undefined));
    expect(limiter.headers(busy)).toMatchObject({ "x-ratelimit-remaining-requests": String(100_000 - 25_000), "x-ratelimit-remaining-tokens": String(10_000_000 - (20_000 * 10 + 5_000 * 1)) });
    for (let k = 0; k < 100; k++) limiter.admit({ id: `idle-${k}`, rpm: 5, tpm: null }, 1);
    expect(limiter.trackedKeys).toBe(101);
    c.advance(61_000);
    limiter.admit({ id: "other", rpm: 5, tpm: null }, 1);
    expect(limiter.trackedKeys).toBe(1);
    expect(limiter.headers(busy)).toMatchObject({ "x-ratelimit-remaining-requests": "100000", "x-ratelimit-remaining-tokens": "10000000" });
  });

  it("never tracks or limits a key without limits", () => {
    const limiter = new RateLimiter();
    for (let i = 0; i < 1000; i++) limiter.admit({ id: "free", rpm: null, tpm: null }, 1e6);
    expect(limiter.headers({ id: "free", rpm: null, tpm: null })).toEqual({});
  });

  it("writes reset durations the vendor's way", () => {
    expect([formatDuration(17), formatDuration(1000), formatDuration(1500), formatDuration(360_000), formatDuration(0)]).toEqual(["17ms", "1s", "1.5s", "6m0s", "0ms"]);
  });

  it("estimates about four characters a token plus the completion", () => {
    expect(estimateTokens([{ content: "x".repeat(400) }], 50, 512)).toBe(100 + 4 + 50);
    expect(estimateTokens([{ content: "" }], null, 512)).toBe(4 + 512);
  });
});
