import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { MakinaError, type Logger } from "../../proto/index.js";
import { LimitRefusal, RateLimiter, rateLimitHeaders, requestsRefused, tokensRefused, tooLargeRefused, type Admission, type KeyLimits, type Limiter } from "./rate-limiter.js";
import { BudgetBook } from "./budget-book.js";
import { ADJUST, ADMIT, ADMIT_BUDGETS, READ, REFUND, SETTLE } from "./redis-limit-scripts.js";
import { BudgetBatches, type BudgetCount } from "./redis-budget-batch.js";
import { budgetHeaders, budgetRefused, lineName, periodOf, type BudgetAsk, type BudgetLine, type BudgetSeed } from "./token-budget.js";

/** How long budget corrections of keys without rate limits gather before they go to Redis together. */
const ADJUST_EVERY_MS = 50;

type AdmitAnswer = [admitted: number, refusal: string, waitMs: number, count: number, used: number, resetMs: number, granted: number, left: number, line: number];

interface Scripts {
  makinaAdmit(keyCount: number, ...args: (string | number)[]): Promise<AdmitAnswer>;
  makinaSettle(keyCount: number, ...args: (string | number)[]): Promise<number>;
  makinaRefund(keyCount: number, ...args: (string | number)[]): Promise<number>;
  makinaRead(keyCount: number, ...args: (string | number)[]): Promise<[count: number, used: number, resetMs: number, left: number, line: number]>;
  makinaAdjust(keyCount: number, ...args: (string | number)[]): Promise<number>;
  makinaAdmitBudgets(keyCount: number, ...args: (string | number)[]): Promise<number[]>;
}

/** How long one read of a budget's count from the usage counts serves this relay's requests that need it. */
const SEED_REUSE_MS = 10_000;

/** How long a limiter call waits for Redis before the request is admitted by this relay's own limits instead. */
const COMMAND_TIMEOUT_MS = 1000;

/**
 * The same per-key limits as {@link RateLimiter} (requests and tokens per minute, sliding window, refunds,
 * late settles), kept in Redis so they hold across every relay: each admission is one Lua script, checked and
 * reserved atomically, so 20 requests at once on a key with `rpm 5`, spread over any number of relays, give
 * exactly 5 admissions. A key's token budgets (its own, its organization's) are checked and reserved in the
 * same script, so they too are exact across relays (a key with budgets and no rate limits: with its
 * organization's other such admissions of the moment, in one script that takes each in turn, {@link BudgetBatches}); a budget's count for a period is read from the usage counts
 * (`seed`) the first time Redis lacks it, then kept in Redis until a week after the period ends.
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
  private readonly seeding = new Map<string, { tokens: Promise<number>; until: number }>();
  /** Budget corrections not sent yet, by organization (hash tag), then by budget count. */
  private adjustments = new Map<string, Map<string, number>>();
  private adjustTimer: NodeJS.Timeout | undefined;
  /** Admissions of keys with budgets and no rate limits, one script per organization and turn of the event loop. */
  private readonly batches: BudgetBatches;

  /**
   * Connects to Redis at `url` (without waiting for it: see {@link ready}). The Redis client is loaded here, so
   * a relay without `--redis` never loads it.
   */
  static async connect(url: string, log: Logger, options: { fail?: "open" | "closed"; windowMs?: number; seed?: BudgetSeed; now?: () => number } = {}): Promise<RedisRateLimiter> {
    const { Redis: RedisClient } = await import("ioredis");
    return new RedisRateLimiter(RedisClient, url, log, options.windowMs ?? 60_000, options.fail ?? "open", options.seed ?? (async () => 0), options.now ?? Date.now);
  }

  readonly scope = "shared";
  budgetExhausted?: (line: BudgetLine) => void;

  private constructor(
    RedisClient: typeof Redis,
    url: string,
    private readonly log: Logger,
    private readonly windowMs: number,
    private readonly fail: "open" | "closed",
    private readonly seed: BudgetSeed,
    /** The clock budgets' periods are read on (the rate window is Redis's own). */
    private readonly now: () => number,
  ) {
    this.local = new RateLimiter(Date.now, windowMs, new BudgetBook(seed, now));
    this.local.budgetExhausted = (line) => this.budgetExhausted?.(line);
    this.redis = new RedisClient(url, {
      lazyConnect: false,
      enableAutoPipelining: true,
      // A command while disconnected fails at once (the relay admits locally) instead of waiting in a queue.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectTimeout: 2000,
      retryStrategy: (times) => Math.min(100 * times, 2000),
    }) as Redis & Scripts;
    // The number of keys comes first in each call: 4 of the rate window, then one per budget line.
    this.redis.defineCommand("makinaAdmit", { lua: ADMIT });
    this.redis.defineCommand("makinaSettle", { lua: SETTLE });
    this.redis.defineCommand("makinaRefund", { lua: REFUND });
    this.redis.defineCommand("makinaRead", { lua: READ });
    this.redis.defineCommand("makinaAdjust", { lua: ADJUST });
    this.redis.defineCommand("makinaAdmitBudgets", { lua: ADMIT_BUDGETS });
    this.batches = new BudgetBatches(
      (names, args) => this.redis.makinaAdmitBudgets(names.length, ...names, ...args),
      (line) => this.seedOf(line),
    );
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

  async admit(key: KeyLimits, estimatedTokens: number, budget?: BudgetAsk): Promise<Admission> {
    const lines = key.budgets ?? [];
    if (key.rpm === null && key.tpm === null && lines.length === 0) return this.local.admit(key, estimatedTokens);
    const ask = budget ?? { want: estimatedTokens, least: estimatedTokens };
    if (key.rpm === null && key.tpm === null) return this.admitBudgeted(key, lines, ask, estimatedTokens);
    const id = randomUUID();
    const keys = keysOf(key, lines, this.now());
    let answer: AdmitAnswer;
    try {
      answer = await this.seeded(lines, (seeds) => this.redis.makinaAdmit(keys.names.length, ...keys.names, this.windowMs, key.rpm ?? -1, key.tpm ?? -1, estimatedTokens, id, lines.length, ask.want, ask.least, ...keys.args(seeds)), (a) => (a[1] === "unseeded" ? a[8] : 0));
    } catch (err) {
      if (err instanceof MakinaError && err.code === "limits_unavailable") throw err;
      this.unreachable(err);
      if (this.fail === "closed") throw limitsUnavailable();
      return this.local.admit(key, estimatedTokens, budget);
    }
    const [admitted, refusal, waitMs, count, used, resetMs, granted, left, line] = answer;
    // The headers of the shared count that admitted or refused it, whichever relay answers.
    const headers = { ...rateLimitHeaders(key, count, used, resetMs), ...budgetHeaders(lines.length ? left : undefined) };
    if (!admitted) {
      // The same refusals, in the same words, as the in-process limiter.
      if (refusal === "budget") {
        const { end } = periodOf(lines[line - 1]!.period, this.now());
        this.budgetExhausted?.(lines[line - 1]!);
        throw new LimitRefusal(budgetRefused(lines[line - 1]!, waitMs, ask.least, end, this.now()), headers);
      }
      if (refusal === "requests") throw new LimitRefusal(requestsRefused(key.rpm!, count, waitMs), headers);
      throw new LimitRefusal(refusal === "too_large" ? tooLargeRefused(key.tpm!, estimatedTokens, this.windowMs) : tokensRefused(key.tpm!, used, estimatedTokens, waitMs), headers);
    }
    // Settles and refunds go out on the same connection as the admission, so Redis runs them in that order.
    let refunded = false;
    let charged = granted;
    const fire = (call: Promise<unknown>) => void call.catch((err: unknown) => this.unreachable(err));
    return {
      headers,
      granted: lines.length ? granted : undefined,
      settle: (tokens) => {
        if (refunded || tokens === null) return;
        const delta = tokens - charged;
        charged = tokens;
        fire(this.redis.makinaSettle(keys.names.length, ...keys.names, this.windowMs, tokens, id, key.tpm === null ? "0" : "1", lines.length, delta));
      },
      // A refund wins over a settle in either order: the script takes back the late charge too.
      refund: () => {
        if (refunded) return;
        refunded = true;
        fire(this.redis.makinaRefund(keys.names.length, ...keys.names, this.windowMs, id, lines.length, charged));
      },
    };
  }

  /** A key with budgets and no rate limits: admitted with the other such admissions of its organization in this turn. */
  private async admitBudgeted(key: KeyLimits, lines: readonly BudgetLine[], ask: BudgetAsk, estimatedTokens: number): Promise<Admission> {
    const now = this.now();
    const tag = key.orgId ?? key.id;
    const counts = budgetCounts(tag, lines, now);
    let verdict;
    try {
      verdict = await this.batches.admit(tag, counts, ask);
    } catch (err) {
      if (err instanceof MakinaError && err.code === "limits_unavailable") throw err;
      this.unreachable(err);
      if (this.fail === "closed") throw limitsUnavailable();
      return this.local.admit(key, estimatedTokens, ask);
    }
    const headers = budgetHeaders(verdict.left);
    if (!verdict.admitted) {
      const line = lines[verdict.line - 1]!;
      this.budgetExhausted?.(line);
      throw new LimitRefusal(budgetRefused(line, verdict.used, ask.least, periodOf(line.period, this.now()).end, this.now()), headers);
    }
    const names = counts.map((c) => c.name);
    let charged = verdict.granted;
    let refunded = false;
    return {
      headers,
      granted: verdict.granted,
      // What a request used replaces its reservation a moment later, with every other correction of the moment.
      settle: (tokens) => {
        if (refunded || tokens === null) return;
        const delta = tokens - charged;
        charged = tokens;
        this.later(names, delta);
      },
      refund: () => {
        if (refunded) return;
        refunded = true;
        this.later(names, -charged);
      },
    };
  }

  async headers(key: KeyLimits): Promise<Record<string, string>> {
    const lines = key.budgets ?? [];
    if (key.rpm === null && key.tpm === null && lines.length === 0) return {};
    const keys = keysOf(key, lines, this.now());
    try {
      const [count, used, resetMs, left] = await this.seeded(lines, (seeds) => this.redis.makinaRead(keys.names.length, ...keys.names, this.windowMs, lines.length, ...keys.args(seeds)), (a) => a[4]);
      return { ...rateLimitHeaders(key, count, used, resetMs), ...budgetHeaders(lines.length ? left : undefined) };
    } catch (err) {
      if (err instanceof MakinaError && err.code === "limits_unavailable") return {};
      this.unreachable(err);
      return this.local.headers(key);
    }
  }

  async spent(line: BudgetLine): Promise<number> {
    const now = this.now();
    const name = budgetKey(line.orgId, line, periodOf(line.period, now).start);
    try {
      const held = await this.redis.get(name);
      if (held !== null) return Number(held);
      // Not counted in Redis yet this period: the usage counts say (and Redis keeps it, unless a relay counted first).
      // (Unreadable usage counts: nothing written, and nothing said spent for now.)
      const seeded = await this.seed(line, periodOf(line.period, now).start).catch(() => undefined);
      if (seeded === undefined) return 0;
      await this.redis.set(name, seeded, "PXAT", expiry(line, now), "NX");
      return Number((await this.redis.get(name)) ?? seeded);
    } catch (err) {
      this.unreachable(err);
      return this.local.spent(line);
    }
  }

  /**
   * Runs a script that needs every budget line's count in Redis; when it answers that one has none (`missing`
   * names it, from 1), reads that line's tokens used this period from the usage counts and runs it again.
   */
  private async seeded<T>(lines: readonly BudgetLine[], run: (seeds: number[]) => Promise<T>, missing: (answer: T) => number): Promise<T> {
    const seeds = lines.map(() => -1);
    for (;;) {
      const answer = await run(seeds);
      const line = missing(answer);
      if (!line || seeds[line - 1]! >= 0) return answer;
      seeds[line - 1] = await this.seedOf(lines[line - 1]!);
    }
  }

  /**
   * A line's tokens used this period, from the usage counts: one read shared by this relay's requests that find
   * Redis without the count at once (kept for a few seconds, then read again if Redis lacks it again).
   */
  private seedOf(line: BudgetLine): Promise<number> {
    const now = this.now();
    const since = periodOf(line.period, now).start;
    const name = lineName(line, since);
    const held = this.seeding.get(name);
    if (held && held.until > now) return held.tokens;
    for (const [n, s] of this.seeding) if (s.until <= now) this.seeding.delete(n);
    // The usage counts unreadable: refused now (503) rather than a count of zero written for every relay.
    const tokens = this.seed(line, since).catch((err: unknown) => {
      this.seeding.delete(name);
      throw new MakinaError("limits_unavailable", "This key's token budget cannot be counted just now (the usage counts cannot be read), so the request was not served. Try again in a moment.", { retryAfterMs: 2000, cause: err });
    });
    this.seeding.set(name, { tokens, until: now + SEED_REUSE_MS });
    return tokens;
  }

  /**
   * Adds `delta` to budget counts a moment later, with every other correction of the moment: what a request used
   * replaces its reservation without a call of its own (its reservation was counted when it was admitted).
   */
  private later(names: string[], delta: number): void {
    if (delta === 0) return;
    for (const name of names) {
      const tag = name.slice(name.indexOf("{"), name.indexOf("}") + 1);
      let of = this.adjustments.get(tag);
      if (!of) this.adjustments.set(tag, (of = new Map()));
      of.set(name, (of.get(name) ?? 0) + delta);
    }
    this.adjustTimer ??= setTimeout(() => this.adjust(), ADJUST_EVERY_MS);
    this.adjustTimer.unref();
  }

  /** Sends the budget corrections gathered: one call per organization. */
  private adjust(): Promise<unknown> {
    this.adjustTimer = undefined;
    const all = this.adjustments;
    this.adjustments = new Map();
    return Promise.all(
      [...all.values()].map((of) => this.redis.makinaAdjust(of.size, ...of.keys(), ...of.values()).catch((err: unknown) => this.unreachable(err))),
    );
  }

  async close(): Promise<void> {
    clearTimeout(this.adjustTimer);
    if (this.adjustments.size) await this.adjust();
    this.redis.disconnect();
  }

  private unreachable(err: unknown): void {
    if (this.down !== null) return;
    const meanwhile = this.fail === "closed" ? "keys with limits are refused (503 limits_unavailable)" : "each relay applies rate limits on its own (and counts token budgets on its own)";
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

/**
 * A key's Redis keys: its rate window's four, then one per budget line in its current period, all under its
 * organization's hash tag (a Redis cluster keeps them on one node, so one script reads and writes them all);
 * `args(seeds)` are the lines' script arguments: limit, seed, when the count expires.
 */
function keysOf(key: KeyLimits, lines: readonly BudgetLine[], now: number): { names: string[]; args(seeds: number[]): number[] } {
  const tag = key.orgId ?? key.id;
  const base = `makina:rl:{${tag}}:${key.id}`;
  const names = [`${base}:req`, `${base}:tok`, `${base}:amt`, `${base}:sum`];
  const counts = budgetCounts(tag, lines, now);
  names.push(...counts.map((c) => c.name));
  return { names, args: (seeds) => counts.flatMap((c, i) => [c.line.tokens, seeds[i]!, c.expiresAt]) };
}

/** Each budget line's count in its current period (its period read once): its name, and when it leaves Redis (a week after the period ends). */
function budgetCounts(tag: string, lines: readonly BudgetLine[], now: number): BudgetCount[] {
  return lines.map((line) => {
    const { start, end } = periodOf(line.period, now);
    return { name: budgetKey(tag, line, start), line, expiresAt: end + KEPT_AFTER_PERIOD_MS };
  });
}

/** A budget line's count in a period, in Redis. */
function budgetKey(tag: string, line: BudgetLine, start: number): string {
  return `makina:budget:{${tag}}:${lineName(line, start)}`;
}

/** How long a budget's count stays in Redis after its period ends. */
const KEPT_AFTER_PERIOD_MS = 7 * 86_400_000;

/** When a line's count in the current period leaves Redis: a week after the period ends. */
function expiry(line: BudgetLine, now: number): number {
  return periodOf(line.period, now).end + KEPT_AFTER_PERIOD_MS;
}
