import { describe, expect, it } from "vitest";
import { MakinaError } from "../../proto/index.js";
import { BudgetBook, LimitRefusal, RateLimiter, periodOf, type BudgetLine, type KeyLimits } from "../../relay/limits/index.js";

const at = (iso: string) => Date.parse(iso);

describe("budget periods", () => {
  it("are calendar periods in UTC: a day from midnight, a week from Monday, a month from its 1st", () => {
    const now = at("2026-11-29T13:45:00Z"); // a Sunday
    expect(periodOf("day", now)).toEqual({ start: at("2026-11-29T00:00:00Z"), end: at("2026-11-30T00:00:00Z") });
    expect(periodOf("week", now)).toEqual({ start: at("2026-11-23T00:00:00Z"), end: at("2026-11-30T00:00:00Z") });
    expect(periodOf("week", at("2026-11-30T00:00:00Z")).start).toBe(at("2026-11-30T00:00:00Z"));
    expect(periodOf("month", now)).toEqual({ start: at("2026-11-01T00:00:00Z"), end: at("2026-12-01T00:00:00Z") });
    expect(periodOf("month", at("2026-12-31T23:59:59Z")).end).toBe(at("2027-01-01T00:00:00Z"));
  });
});

describe("token budgets counted by one relay", () => {
  let clock = at("2026-11-29T23:59:00Z");
  const seeds: { line: string; since: number }[] = [];
  const limiter = new RateLimiter(
    () => clock,
    60_000,
    new BudgetBook(async (line, since) => {
      seeds.push({ line: line.id, since });
      // The usage counts say the key used 300 tokens earlier today (none in a period after it).
      return since === at("2026-11-29T00:00:00Z") ? 300 : 0;
    }, () => clock),
  );
  const line: BudgetLine = { scope: "key", id: "key_1", orgId: "org_1", tokens: 1000, period: "day" };
  const key: KeyLimits = { id: "key_1", orgId: "org_1", rpm: null, tpm: null, budgets: [line] };
  // A refusal is thrown at once when the counts are held, or rejected after they are read: either way, a rejection here.
  const attempt = async (k: KeyLimits, estimate: number, budget: { want: number; least: number }) => limiter.admit(k, estimate, budget);

  it("starts a period's count from the usage counts, reserves, settles to what was used, and refuses what does not fit until the period ends", async () => {
    const first = await limiter.admit(key, 0, { want: 500, least: 50 });
    expect(seeds).toEqual([{ line: "key_1", since: at("2026-11-29T00:00:00Z") }]);
    expect([first.granted, first.headers]).toEqual([500, { "x-budget-remaining-tokens": "200" }]);
    // Less is left than it wants: it gets what is left (its completion is held to it), as long as its least fits.
    const second = await limiter.admit(key, 0, { want: 500, least: 50 });
    expect([second.granted, second.headers["x-budget-remaining-tokens"]]).toEqual([200, "0"]);
    const refused = await attempt(key, 0, { want: 100, least: 10 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LimitRefusal);
    const err = refused as LimitRefusal;
    expect([err.code, err.headers]).toEqual(["budget_exceeded", { "x-budget-remaining-tokens": "0" }]);
    expect(err.message).toBe("This key's token budget for today is exceeded: it is spent (1000 of 1000 tokens). It renews at 2026-11-30T00:00:00.000Z.");
    // Retry-After: the period's end, a minute away.
    expect(err.retryAfterMs).toBe(60_000);
    // The first used 120 of its 500, the second was refused by its runtime: 300 + 120 spent.
    first.settle(120);
    second.refund();
    expect(await limiter.spent(line)).toBe(420);
    expect(await limiter.headers(key)).toEqual({ "x-budget-remaining-tokens": "580" });
    // A request that used more than it reserved (its prompt was longer than estimated) is charged what it used.
    const third = await limiter.admit(key, 0, { want: 100, least: 10 });
    third.settle(700);
    expect(await limiter.spent(line)).toBe(1120);
    await expect(attempt(key, 0, { want: 1, least: 1 })).rejects.toMatchObject({ code: "budget_exceeded" });
    // The clock passes midnight: a new period, counted from what the usage counts say of it.
    clock = at("2026-11-30T00:00:01Z");
    const fresh = await limiter.admit(key, 0, { want: 100, least: 10 });
    expect([fresh.granted, fresh.headers["x-budget-remaining-tokens"]]).toEqual([100, "900"]);
    expect(seeds.at(-1)).toEqual({ line: "key_1", since: at("2026-11-30T00:00:00Z") });
  });

  it("counts a request against its key's budget and its organization's, the tighter refusing, and its rate limits with them", async () => {
    const org: BudgetLine = { scope: "org", id: "org_2", orgId: "org_2", tokens: 150, period: "month" };
    const a: KeyLimits = { id: "key_a", orgId: "org_2", rpm: 10, tpm: null, budgets: [{ scope: "key", id: "key_a", orgId: "org_2", tokens: 1000, period: "day" }, org] };
    const b: KeyLimits = { id: "key_b", orgId: "org_2", rpm: null, tpm: null, budgets: [org] };
    const fromA = await limiter.admit(a, 100, { want: 100, least: 100 });
    expect(fromA.headers).toMatchObject({ "x-ratelimit-remaining-requests": "9", "x-budget-remaining-tokens": "50" });
    const refused = (await attempt(b, 60, { want: 60, least: 60 }).then(() => undefined, (e: unknown) => MakinaError.from(e)))!;
    expect([refused.code, refused.message]).toEqual(["budget_exceeded", "The organization's token budget for this month is exceeded: 50 of 150 tokens are left and this request needs at least 60. It renews at 2026-12-01T00:00:00.000Z."]);
    // A refusal for the budget takes no place of the key's rate limit.
    expect(await limiter.headers(a)).toMatchObject({ "x-ratelimit-remaining-requests": "9" });
    // Refused by its runtime after it counted the prompt: the refund gives back what the settle charged.
    fromA.settle(130);
    expect(await limiter.spent(org)).toBe(130);
    fromA.refund();
    expect(await limiter.spent(org)).toBe(0);
  });
});
