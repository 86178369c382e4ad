import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { MakinaError, silentLogger } from "../../proto/index.js";
import { RedisRateLimiter, type BudgetLine, type KeyLimits, type LimitRefusal } from "../../relay/limits/index.js";
import { startRedis, type RedisServer } from "../helpers/redis-server.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";

/**
 * `makina relay --redis redis://…`: the keys' rate-limit windows in a real Redis server, so limits hold across
 * relays. Several RedisRateLimiters on one Redis stand for several relays (each relay has one); the relay test
 * runs the whole gateway with the stand-in model of test/fakes.
 */
describe("rate limits kept in Redis", () => {
  let redis: RedisServer;
  const limiters: RedisRateLimiter[] = [];
  const relayLimiter = async (windowMs?: number) => {
    const limiter = await RedisRateLimiter.connect(redis.url, silentLogger(), { windowMs });
    limiters.push(limiter);
    await limiter.ready();
    return limiter;
  };
  let n = 0;
  const key = (limits: Omit<KeyLimits, "id">): KeyLimits => ({ id: `key_${process.pid}_${++n}`, ...limits });

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    for (const l of limiters) await l.close();
    await redis?.close();
  });

  it("admits exactly rpm of 20 requests sent at once through 3 relays, and refuses the rest with the time to wait", async () => {
    const relays = [await relayLimiter(), await relayLimiter(), await relayLimiter()];
    const k = key({ rpm: 5, tpm: null });
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => relays[i % 3]!.admit(k, 10)));
    const admitted = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    const refused = results.flatMap((r) => (r.status === "rejected" ? [MakinaError.from(r.reason)] : []));
    expect(admitted).toHaveLength(5);
    expect(refused).toHaveLength(15);
    for (const err of refused) {
      expect(err.code).toBe("rate_limit_requests");
      expect(err.message).toMatch(/^Rate limit reached for requests per minute: limit 5, used 5\. Please try again in /);
      expect(err.retryAfterMs).toBeGreaterThan(0);
      expect(err.retryAfterMs).toBeLessThanOrEqual(60_000);
    }
    // Each refusal's headers are the shared count that refused it: none left, on whichever relay.
    for (const r of results) if (r.status === "rejected") expect((r.reason as { headers: Record<string, string> }).headers).toMatchObject({ "x-ratelimit-limit-requests": "5", "x-ratelimit-remaining-requests": "0" });
    // Each admission's headers count it: the five saw 4, 3, 2, 1 and 0 left, in some order.
    expect(admitted.map((a) => a.headers["x-ratelimit-remaining-requests"]).sort()).toEqual(["0", "1", "2", "3", "4"]);
    // Any relay reads the same window.
    for (const relay of relays) expect(await relay.headers(k)).toMatchObject({ "x-ratelimit-limit-requests": "5", "x-ratelimit-remaining-requests": "0" });
    // A refund on one relay gives the place back to all of them.
    admitted[0]!.refund();
    await vi.waitFor(async () => expect((await relays[2]!.headers(k))["x-ratelimit-remaining-requests"]).toBe("1"));
    await expect(relays[1]!.admit(k, 10)).resolves.toBeDefined();
    await expect(relays[0]!.admit(k, 10)).rejects.toMatchObject({ code: "rate_limit_requests" });
  });

  it("counts tokens across relays: what requests really used, refunds, and requests too large for the limit", async () => {
    const [a, b, c] = [await relayLimiter(), await relayLimiter(), await relayLimiter()];
    const k = key({ rpm: null, tpm: 1000 });
    const first = await a.admit(k, 100);
    expect(first.headers["x-ratelimit-remaining-tokens"]).toBe("900");
    first.settle(300);
    await vi.waitFor(async () => expect((await b.headers(k))["x-ratelimit-remaining-tokens"]).toBe("700"));
    await expect(c.admit(k, 800)).rejects.toMatchObject({ code: "rate_limit_tokens", message: expect.stringMatching(/limit 1000, used 300, requested about 800/) });
    await expect(c.admit(k, 1001)).rejects.toMatchObject({ code: "rate_limit_tokens", message: expect.stringMatching(/^Request too large for tokens per minute/) });
    const second = await b.admit(k, 200);
    second.settle(150);
    second.refund();
    // A refund wins over a settle, in either order.
    await vi.waitFor(async () => expect((await c.headers(k))["x-ratelimit-remaining-tokens"]).toBe("700"));
  });

  it("charges a request that outlived the window when it ends, in the window current then, seen by every relay", async () => {
    // A 1-second window stands for the minute.
    const [a, b] = [await relayLimiter(1000), await relayLimiter(1000)];
    const k = key({ rpm: 10, tpm: 1000 });
    const long = await a.admit(k, 40);
    await vi.waitFor(async () => expect((await b.headers(k))["x-ratelimit-remaining-tokens"]).toBe("1000"), { timeout: 5000, interval: 100 });
    long.settle(250);
    await vi.waitFor(async () => expect(await b.headers(k)).toMatchObject({ "x-ratelimit-remaining-tokens": "750", "x-ratelimit-remaining-requests": "10" }));
  });

  it("spends a token budget exactly across relays: 20 requests at once through 3 relays against a budget that fits 5, its count read once from the usage counts, renewed when the period rolls over", async () => {
    let clock = Date.parse("2026-11-30T23:59:58Z");
    const seeded: number[] = [];
    const relays = await Promise.all(
      [0, 1, 2].map(async () => {
        const limiter = await RedisRateLimiter.connect(redis.url, silentLogger(), {
          now: () => clock,
          // The usage counts say 100 tokens were spent this month before; none in the next.
          seed: async (_line, since) => {
            seeded.push(since);
            return since === Date.parse("2026-11-01T00:00:00Z") ? 100 : 0;
          },
        });
        limiters.push(limiter);
        await limiter.ready();
        return limiter;
      }),
    );
    const org = `org_${process.pid}_${++n}`;
    const line: BudgetLine = { scope: "org", id: org, orgId: org, tokens: 600, period: "month" };
    const k: KeyLimits = { id: `key_${process.pid}_${++n}`, orgId: org, rpm: 100, tpm: null, budgets: [line] };
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => relays[i % 3]!.admit(k, 100, { want: 100, least: 100 })));
    const admitted = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    const refused = results.flatMap((r) => (r.status === "rejected" ? [r.reason as LimitRefusal] : []));
    expect([admitted.length, refused.length]).toEqual([5, 15]);
    // Each admission's header is the shared count that admitted it; each refusal's, the count that refused it.
    expect(admitted.map((a) => a.headers["x-budget-remaining-tokens"]).sort()).toEqual(["0", "100", "200", "300", "400"]);
    for (const r of refused) {
      expect([r.code, r.headers["x-budget-remaining-tokens"], r.retryAfterMs]).toEqual(["budget_exceeded", "0", 2000]);
      // A budget refusal takes no place of the key's rate limit.
      expect(r.headers["x-ratelimit-remaining-requests"]).toBe("95");
    }
    // The budget's count stays in Redis past its period (a week after it ends), whatever the rate window's keys do.
    const { Redis } = await import("ioredis");
    const direct = new Redis(redis.url);
    const counts = await direct.keys(`makina:budget:{${org}}:*`);
    expect(counts).toHaveLength(1);
    expect(await direct.pttl(counts[0]!)).toBeGreaterThan(7 * 86_400_000);
    direct.disconnect();
    // The count was read from the usage counts by the relays that found Redis without it, no more than once each.
    expect(seeded.length).toBeGreaterThanOrEqual(1);
    expect(seeded.length).toBeLessThanOrEqual(3);
    // What each really used replaces its reservation, on whichever relay: one used 350 (more than it reserved), one was refunded.
    admitted[0]!.settle(350);
    admitted[1]!.refund();
    await vi.waitFor(async () => expect(await relays[2]!.spent(line)).toBe(100 + 350 + 3 * 100));
    expect((await relays[1]!.headers(k))["x-budget-remaining-tokens"]).toBe("0");
    // Midnight of the month's end passes: a new period, counted afresh on every relay.
    clock = Date.parse("2026-12-01T00:00:01Z");
    const next = await relays[0]!.admit(k, 100, { want: 100, least: 100 });
    expect(next.headers["x-budget-remaining-tokens"]).toBe("500");
    expect(await relays[1]!.spent(line)).toBe(100);
    // A key with a budget and no rate limits: what its requests used reaches Redis a moment after they end, gathered;
    // a refund after a settle gives back what the settle charged.
    const only: KeyLimits = { id: `key_${process.pid}_${++n}`, orgId: org, rpm: null, tpm: null, budgets: [line] };
    const [used, refunded] = [await relays[0]!.admit(only, 50, { want: 50, least: 50 }), await relays[1]!.admit(only, 50, { want: 50, least: 50 })];
    used.settle(80);
    refunded.settle(70);
    refunded.refund();
    await vi.waitFor(async () => expect(await relays[2]!.spent(line)).toBe(100 + 80));
  });

  it("admits a key with budgets and no rate limits exactly across relays too, its admissions of one moment sent together: its own budget and its organization's, each read once from the usage counts, an unreadable one refusing only the requests that need it", async () => {
    const org = `org_${process.pid}_${++n}`;
    const orgLine: BudgetLine = { scope: "org", id: org, orgId: org, tokens: 1000, period: "day" };
    let broken = "";
    const seeded: string[] = [];
    const relays = await Promise.all(
      [0, 1, 2].map(async () => {
        const limiter = await RedisRateLimiter.connect(redis.url, silentLogger(), {
          // The organization had spent 300 today before; a key's own budget nothing; a broken line cannot be read.
          seed: async (line) => {
            if (line.id === broken) throw new Error("usage counts unreadable");
            seeded.push(line.id);
            return line.scope === "org" ? 300 : 0;
          },
        });
        limiters.push(limiter);
        await limiter.ready();
        return limiter;
      }),
    );
    // Two keys of the organization, each with a budget of its own: 450 for one (4 requests of 100 fit), none for the other.
    const tight = key({ orgId: org, rpm: null, tpm: null });
    tight.budgets = [{ scope: "key", id: tight.id, orgId: org, tokens: 450, period: "day" }, orgLine];
    const wide = key({ orgId: org, rpm: null, tpm: null, budgets: [orgLine] });
    const { Redis } = await import("ioredis");
    const direct = new Redis(redis.url);
    const scripts = async () => [...(await direct.info("commandstats")).matchAll(/^cmdstat_(?:eval|evalsha):calls=(\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
    const scriptsBefore = await scripts();
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => relays[i % 3]!.admit(i % 2 ? wide : tight, 100, { want: 100, least: 100 })),
    );
    // Sent together: one script per relay (and once more where a count had to be read first), not one per request.
    expect((await scripts()) - scriptsBefore).toBeLessThan(10);
    direct.disconnect();
    const admitted = results.flatMap((r, i) => (r.status === "fulfilled" ? [{ i, a: r.value }] : []));
    const refused = results.flatMap((r) => (r.status === "rejected" ? [r.reason as LimitRefusal] : []));
    // The organization has 700 left: exactly 7 requests of 100, whichever relays and keys, and never more than 4 of the tight key.
    expect(admitted).toHaveLength(7);
    expect(admitted.filter(({ i }) => i % 2 === 0).length).toBeLessThanOrEqual(4);
    expect(refused.every((r) => r.code === "budget_exceeded")).toBe(true);
    expect(await relays[1]!.spent(orgLine)).toBe(1000);
    expect(seeded.filter((id) => id === org).length).toBeLessThanOrEqual(3);
    expect(admitted.map(({ a }) => a.granted)).toEqual(Array(7).fill(100));
    // What they used replaces their reservations a moment later; a refund gives back all of one.
    admitted[0]!.a.settle(30);
    admitted[1]!.a.refund();
    await vi.waitFor(async () => expect(await relays[2]!.spent(orgLine)).toBe(1000 - 70 - 100));
    // A request asking more than is left is granted what is left (never below its least), then refused once spent.
    const rest = await relays[0]!.admit(wide, 100, { want: 500, least: 50 });
    expect([rest.granted, rest.headers["x-budget-remaining-tokens"]]).toEqual([170, "0"]);
    await expect(relays[1]!.admit(wide, 10, { want: 10, least: 10 })).rejects.toMatchObject({ code: "budget_exceeded", headers: { "x-budget-remaining-tokens": "0" } });
    // A line whose usage counts cannot be read refuses the requests that need it (503), not the others sent with them.
    const other = `org_${process.pid}_${++n}`;
    broken = `key_${process.pid}_broken`;
    const brokenKey: KeyLimits = { id: broken, orgId: other, rpm: null, tpm: null, budgets: [{ scope: "key", id: broken, orgId: other, tokens: 100, period: "day" }] };
    const fineId = `key_${process.pid}_${++n}`;
    const fine: KeyLimits = { id: fineId, orgId: other, rpm: null, tpm: null, budgets: [{ scope: "key", id: fineId, orgId: other, tokens: 100, period: "day" }] };
    const [b, f] = await Promise.allSettled([relays[0]!.admit(brokenKey, 10, { want: 10, least: 10 }), relays[0]!.admit(fine, 10, { want: 10, least: 10 })]);
    expect(b.status === "rejected" && (b.reason as MakinaError).code).toBe("limits_unavailable");
    expect(f.status === "fulfilled" && f.value.headers["x-budget-remaining-tokens"]).toBe("90");
  });

  describe("a relay started with --redis", () => {
    let gw: TestGateway;
    const admin = async (method: string, path: string, body?: unknown) =>
      fetch(`${gw.relay.adminUrl}/admin/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${gw.relay.adminToken}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const newKey = async (rpm: number) => {
      const made = await admin("POST", "/keys", { org: gw.orgId, name: `rpm-${rpm}`, rpm });
      expect(made.status).toBe(201);
      return (await made.json()) as { id: string; key: string };
    };
    const chat = (apiKey: string) =>
      fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "stories", messages: [{ role: "user", content: "Once" }], max_tokens: 2 }),
      });
    const health = async () => (await (await fetch(`${gw.relay.url}/health`)).json()) as Record<string, string>;

    beforeAll(async () => {
      gw = await startTestGateway({ runtime: "fake", relayFlags: { redis: redis.url } });
    });
    afterAll(async () => {
      await gw?.close();
    });

    it("keeps each key's window in Redis, where another relay finds it", async () => {
      const { id, key: apiKey } = await newKey(2);
      const statuses: [number, string | null][] = [];
      for (let i = 0; i < 3; i++) {
        const res = await chat(apiKey);
        statuses.push([res.status, res.headers.get("x-ratelimit-remaining-requests")]);
        await res.arrayBuffer();
      }
      expect(statuses.slice(0, 2)).toEqual([[200, "1"], [200, "0"]]);
      expect(statuses[2]![0]).toBe(429);
      const other = await relayLimiter();
      expect(await other.headers({ id, orgId: gw.orgId, rpm: 2, tpm: null })).toMatchObject({ "x-ratelimit-remaining-requests": "0" });
      await expect(other.admit({ id, orgId: gw.orgId, rpm: 2, tpm: null }, 10)).rejects.toMatchObject({ code: "rate_limit_requests" });
      expect(await health()).toEqual({ status: "ok" });
    });

    it("answers a 429 with the headers of the count that refused it, not of one read before another relay admitted more", async () => {
      const { id, key: apiKey } = await newKey(2);
      // The request's headers arrive; its body waits while another relay admits the key's two requests.
      const answer = new Promise<{ status: number; remaining: string | undefined }>((resolve, reject) => {
        const url = new URL(`${gw.baseURL}/chat/completions`);
        const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: "POST", headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" } }, (res) => {
          res.resume();
          resolve({ status: res.statusCode ?? 0, remaining: res.headers["x-ratelimit-remaining-requests"] as string | undefined });
        });
        req.on("error", reject);
        req.write('{"model": "stories", ');
        setTimeout(() => {
          void (async () => {
            const other = await relayLimiter();
            for (let i = 0; i < 2; i++) await other.admit({ id, orgId: gw.orgId, rpm: 2, tpm: null }, 10);
            req.end('"messages": [{"role": "user", "content": "Once"}], "max_tokens": 2}');
          })().catch(reject);
        }, 300);
      });
      expect(await answer).toEqual({ status: 429, remaining: "0" });
    });

    it("applies limits on its own while Redis is down, says so in /health, and shares them again once it is back", async () => {
      await redis.stop();
      const { key: apiKey } = await newKey(1);
      // Served and limited by this relay's own window meanwhile: never refused for Redis being away.
      const first = await chat(apiKey);
      expect([first.status, first.headers.get("x-ratelimit-remaining-requests")]).toEqual([200, "0"]);
      expect((await chat(apiKey)).status).toBe(429);
      expect(await health()).toMatchObject({ status: "degraded", limits: expect.stringMatching(/^Redis cannot be reached .*each relay applies rate limits on its own/) });

      await redis.start();
      await vi.waitFor(async () => expect(await health()).toEqual({ status: "ok" }), { timeout: 10_000, interval: 200 });
      const { id, key: after } = await newKey(1);
      expect((await chat(after)).status).toBe(200);
      const other = await relayLimiter();
      expect(await other.headers({ id, orgId: gw.orgId, rpm: 1, tpm: null })).toMatchObject({ "x-ratelimit-remaining-requests": "0" });
    });

    it("with --redis-fail closed, refuses keys with limits while Redis is down (503 limits_unavailable), serves keys without, and limits again once it is back", async () => {
      const closed = await startTestGateway({ runtime: "fake", relayFlags: { redis: redis.url, redisFail: "closed" } });
      try {
        const call = async (method: string, path: string, body: unknown) =>
          (await (
            await fetch(`${closed.relay.adminUrl}/admin/v1${path}`, { method, headers: { authorization: `Bearer ${closed.relay.adminToken}`, "content-type": "application/json" }, body: JSON.stringify(body) })
          ).json()) as { key: string };
        const limited = (await call("POST", "/keys", { org: closed.orgId, name: "limited", rpm: 100 })).key;
        const unlimited = (await call("POST", "/keys", { org: closed.orgId, name: "unlimited" })).key;
        const ask = (apiKey: string) =>
          fetch(`${closed.baseURL}/chat/completions`, {
            method: "POST",
            headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
            body: JSON.stringify({ model: "stories", messages: [{ role: "user", content: "Once" }], max_tokens: 2 }),
          });
        expect((await ask(limited)).status).toBe(200);
        await redis.stop();
        const refused = await ask(limited);
        expect([refused.status, refused.headers.get("retry-after")]).toEqual([503, "2"]);
        expect(await refused.json()).toEqual({
          error: {
            message: "This key's rate limits cannot be checked just now (the relays' shared limits are unreachable), so the request was not served. Try again in a moment.",
            type: "service_unavailable_error",
            param: null,
            code: "limits_unavailable",
          },
        });
        expect((await ask(unlimited)).status).toBe(200);
        const said = (await (await fetch(`${closed.relay.url}/health`)).json()) as Record<string, string>;
        expect(said).toMatchObject({ status: "degraded", limits: expect.stringMatching(/keys with limits are refused \(503 limits_unavailable\) until it answers$/) });
        await redis.start();
        await vi.waitFor(async () => expect((await ask(limited)).status).toBe(200), { timeout: 10_000, interval: 200 });
      } finally {
        await closed.close();
      }
    });
  });
});
