import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { MakinaError, type Logger } from "../../proto/index.js";
import { LimitRefusal, RateLimiter, rateLimitHeaders, requestsRefused, tokensRefused, tooLargeRefused, type Admission, type KeyLimits, type Limiter } from "./rate-limiter.js";

/**
 * The window's bookkeeping, shared by every script: a key's entries leave once older than the window. Per key
 * (its id in a hash tag, so a cluster keeps them on one node): `req`, the requests by time; `tok`, the token
 * charges by time (a request's, or a late settle's); `amt`, each charge's tokens; `sum`, their total. Time is
 * Redis's own (`TIME`), so relays whose clocks differ still share one window.
 */
const AGE = `
local req, tok, amt, sum = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local window = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cutoff = now - window
local expired = redis.call('ZRANGEBYSCORE', tok, '-inf', cutoff)
if #expired > 0 then
  local freed = 0
  for _, id in ipairs(expired) do freed = freed + (tonumber(redis.call('HGET', amt, id)) or 0) end
  redis.call('HDEL', amt, unpack(expired))
  redis.call('ZREMRANGEBYSCORE', tok, '-inf', cutoff)
  redis.call('DECRBY', sum, freed)
end
redis.call('ZREMRANGEBYSCORE', req, '-inf', cutoff)
local function touch()
  for _, k in ipairs(KEYS) do redis.call('PEXPIRE', k, window * 2) end
end
local function reset()
  local newest = redis.call('ZRANGE', tok, -1, -1, 'WITHSCORES')
  if #newest == 0 then return 0 end
  return tonumber(newest[2]) + window - now
end
`;

/**
 * Admits one request or refuses it, in one atomic step: ARGV window, rpm (-1: none), tpm (-1: none), the
 * estimate, the admission's id. Answers {admitted 1|0, refusal, wait ms, requests, tokens, reset ms}.
 */
const ADMIT = `${AGE}
local rpm, tpm, estimate, id = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local count = redis.call('ZCARD', req)
local used = tonumber(redis.call('GET', sum) or '0')
if rpm >= 0 and count >= rpm then
  local at = redis.call('ZRANGE', req, count - rpm, count - rpm, 'WITHSCORES')
  return {0, 'requests', tonumber(at[2]) + window - now, count, used, reset()}
end
if tpm >= 0 then
  if estimate > tpm then return {0, 'too_large', window, count, used, reset()} end
  if used + estimate > tpm then
    local wait, freed = window, 0
    local entries = redis.call('ZRANGE', tok, 0, -1, 'WITHSCORES')
    for i = 1, #entries, 2 do
      freed = freed + (tonumber(redis.call('HGET', amt, entries[i])) or 0)
      if used - freed + estimate <= tpm then
        wait = tonumber(entries[i + 1]) + window - now
        break
      end
    end
    return {0, 'tokens', wait, count, used, reset()}
  end
end
redis.call('ZADD', req, now, id)
redis.call('ZADD', tok, now, id)
redis.call('HSET', amt, id, estimate)
redis.call('INCRBY', sum, estimate)
touch()
return {1, '', 0, count + 1, used + estimate, window}
`;

/**
 * Replaces an admission's estimate with what it used (ARGV window, tokens, id, whether the key has a tpm). An
 * admission that left the window while it ran is charged now, in the window current when it ends.
 */
const SETTLE = `${AGE}
local tokens, id, limited = tonumber(ARGV[2]), ARGV[3], ARGV[4] == '1'
local old = redis.call('HGET', amt, id)
if old then
  redis.call('HSET', amt, id, tokens)
  redis.call('INCRBY', sum, tokens - tonumber(old))
elseif limited and tokens > 0 then
  local late = id .. ':late'
  redis.call('ZADD', tok, now, late)
  redis.call('HSET', amt, late, tokens)
  redis.call('INCRBY', sum, tokens)
end
touch()
return 1
`;

/** Gives back everything an admission took (ARGV window, id; its late charge too). */
const REFUND = `${AGE}
local id = ARGV[2]
for _, entry in ipairs({id, id .. ':late'}) do
  local old = redis.call('HGET', amt, entry)
  if old then
    redis.call('DECRBY', sum, tonumber(old))
    redis.call('HDEL', amt, entry)
    redis.call('ZREM', tok, entry)
  end
end
redis.call('ZREM', req, id)
return 1
`;

/** The window as it stands: ARGV window. Answers {requests, tokens, reset ms}. */
const READ = `${AGE}
return {redis.call('ZCARD', req), tonumber(redis.call('GET', sum) or '0'), reset()}
`;

interface Scripts {
  makinaAdmit(req: string, tok: string, amt: string, sum: string, window: number, rpm: number, tpm: number, estimate: number, id: string): Promise<[number, string, number, number, number, number]>;
  makinaSettle(req: string, tok: string, amt: string, sum: string, window: number, tokens: number, id: string, limited: string): Promise<number>;
  makinaRefund(req: string, tok: string, amt: string, sum: string, window: number, id: string): Promise<number>;
  makinaRead(req: string, tok: string, amt: string, sum: string, window: number): Promise<[number, number, number]>;
}

/** How long a limiter call waits for Redis before the request is admitted by this relay's own limits instead. */
const COMMAND_TIMEOUT_MS = 1000;

/**
 * The same per-key limits as {@link RateLimiter} (requests and tokens per minute, sliding window, refunds,
 * late settles), kept in Redis so they hold across every relay: each admission is one Lua script, checked and
 * reserved atomically, so 20 requests at once on a key with `rpm 5`, spread over any number of relays, give
 * exactly 5 admissions.
 *
 * When Redis cannot be reached, by default (`fail: "open"`) requests are not refused for it: each relay admits
 * by its own in-process limits (so a key may get up to its limit on each relay), says so in its log and in
 * `/health`, and goes back to Redis by itself once it answers. With `fail: "closed"`, a key with limits gets 503
 * `limits_unavailable` meanwhile instead (a key without limits is served either way). Settles and refunds of admissions made through Redis that Redis misses
 * while away are lost (the window forgets them within a minute anyway).
 */
export class RedisRateLimiter implements Limiter {
  private readonly redis: Redis & Scripts;
  private readonly local: RateLimiter;
  private down: string | null = null;

  /**
   * Connects to Redis at `url` (without waiting for it: see {@link ready}). The Redis client is loaded here, so
   * a relay without `--redis` never loads it.
   */
  static async connect(url: string, log: Logger, options: { fail?: "open" | "closed"; windowMs?: number } = {}): Promise<RedisRateLimiter> {
    const { Redis: RedisClient } = await import("ioredis");
    return new RedisRateLimiter(RedisClient, url, log, options.windowMs ?? 60_000, options.fail ?? "open");
  }

  private constructor(
    RedisClient: typeof Redis,
    url: string,
    private readonly log: Logger,
    private readonly windowMs: number,
    private readonly fail: "open" | "closed",
  ) {
    this.local = new RateLimiter(Date.now, windowMs);
    this.redis = new RedisClient(url, {
      lazyConnect: false,
      // A command while disconnected fails at once (the relay admits locally) instead of waiting in a queue.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectTimeout: 2000,
      retryStrategy: (times) => Math.min(100 * times, 2000),
    }) as Redis & Scripts;
    this.redis.defineCommand("makinaAdmit", { numberOfKeys: 4, lua: ADMIT });
    this.redis.defineCommand("makinaSettle", { numberOfKeys: 4, lua: SETTLE });
    this.redis.defineCommand("makinaRefund", { numberOfKeys: 4, lua: REFUND });
    this.redis.defineCommand("makinaRead", { numberOfKeys: 4, lua: READ });
    this.redis.on("error", (err: Error) => this.unreachable(err));
    this.redis.on("ready", () => {
      if (this.down === null) return;
      this.down = null;
      this.log.info("Redis answers again: rate limits are shared by every relay again");
    });
  }

  /** Why limits are per relay now (Redis unreachable), for `/health`; null while Redis answers. */
  get problem(): string | null {
    return this.down;
  }

  /** Waits until Redis answers (at start), or throws after `timeoutMs`. */
  async ready(timeoutMs = 10_000): Promise<void> {
    if (this.redis.status === "ready") return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.redis.off("ready", onReady);
        reject(new Error(`Redis did not answer within ${timeoutMs / 1000} s (${this.down ?? "no connection"})`));
      }, timeoutMs);
      const onReady = () => {
        clearTimeout(timer);
        resolve();
      };
      this.redis.once("ready", onReady);
    });
  }

  async admit(key: KeyLimits, estimatedTokens: number): Promise<Admission> {
    if (key.rpm === null && key.tpm === null) return this.local.admit(key, estimatedTokens);
    const id = randomUUID();
    let answer: [number, string, number, number, number, number];
    try {
      answer = await this.redis.makinaAdmit(...keysOf(key.id), this.windowMs, key.rpm ?? -1, key.tpm ?? -1, estimatedTokens, id);
    } catch (err) {
      this.unreachable(err);
      if (this.fail === "closed") throw limitsUnavailable();
      return this.local.admit(key, estimatedTokens);
    }
    const [admitted, refusal, waitMs, count, used, resetMs] = answer;
    if (!admitted) {
      // The same refusals, in the same words, as the in-process limiter; its headers are the shared count that refused it.
      const headers = rateLimitHeaders(key, count, used, resetMs);
      if (refusal === "requests") throw new LimitRefusal(requestsRefused(key.rpm!, count, waitMs), headers);
      throw new LimitRefusal(refusal === "too_large" ? tooLargeRefused(key.tpm!, estimatedTokens, this.windowMs) : tokensRefused(key.tpm!, used, estimatedTokens, waitMs), headers);
    }
    // Settles and refunds go out on the same connection as the admission, so Redis runs them in that order.
    let refunded = false;
    const fire = (call: Promise<unknown>) => void call.catch((err: unknown) => this.unreachable(err));
    return {
      headers: rateLimitHeaders(key, count, used, resetMs),
      settle: (tokens) => {
        if (refunded || tokens === null) return;
        fire(this.redis.makinaSettle(...keysOf(key.id), this.windowMs, tokens, id, key.tpm === null ? "0" : "1"));
      },
      // A refund wins over a settle in either order: the script takes back the late charge too.
      refund: () => {
        if (refunded) return;
        refunded = true;
        fire(this.redis.makinaRefund(...keysOf(key.id), this.windowMs, id));
      },
    };
  }

  async headers(key: KeyLimits): Promise<Record<string, string>> {
    if (key.rpm === null && key.tpm === null) return {};
    try {
      const [count, used, resetMs] = await this.redis.makinaRead(...keysOf(key.id), this.windowMs);
      return rateLimitHeaders(key, count, used, resetMs);
    } catch (err) {
      this.unreachable(err);
      return this.local.headers(key);
    }
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }

  private unreachable(err: unknown): void {
    if (this.down !== null) return;
    const meanwhile = this.fail === "closed" ? "keys with limits are refused (503 limits_unavailable)" : "each relay applies rate limits on its own";
    this.down = `Redis cannot be reached (${err instanceof Error ? err.message : String(err)}): ${meanwhile} until it answers`;
    this.log.warn(`Redis cannot be reached: ${meanwhile} until it answers`, { error: String(err) });
  }
}

/** 503: the key has limits, the relays' shared window cannot be read, and the operator chose to refuse rather than count per relay. */
function limitsUnavailable(): MakinaError {
  return new MakinaError("limits_unavailable", "This key's rate limits cannot be checked just now (the relays' shared limits are unreachable), so the request was not served. Try again in a moment.", {
    retryAfterMs: 2000,
  });
}

function keysOf(keyId: string): [string, string, string, string] {
  const base = `makina:rl:{${keyId}}`;
  return [`${base}:req`, `${base}:tok`, `${base}:amt`, `${base}:sum`];
}
