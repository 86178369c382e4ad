import { MakinaError } from "../../proto/index.js";
import { BudgetBook, type Reservation } from "./budget-book.js";
import { BudgetRefusal, budgetHeaders, type BudgetAsk, type BudgetLine } from "./token-budget.js";

/** The limits of one key (`null` = unlimited). */
export interface KeyLimits {
  id: string;
  rpm: number | null;
  tpm: number | null;
  /** The token budgets its requests count against (its own, its organization's); none: unbudgeted. */
  budgets?: readonly BudgetLine[];
  /** Its organization (where its budgets are kept together); its own id stands in when absent. */
  orgId?: string;
}

/** A request admitted against a key's limits. */
export interface Admission {
  /** The key's `x-ratelimit-*` (and `x-budget-remaining-tokens`) headers with this request counted (empty for an unlimited key). */
  readonly headers: Record<string, string>;
  /** Tokens reserved of the key's budgets (at most what was asked, at least its `least`); undefined: unbudgeted. */
  readonly granted?: number;
  /** Replaces the token estimate with what the request really used; `null` keeps the estimate. Ignored after a refund. */
  settle(tokens: number | null): void;
  /** Gives back everything the request took (it was refused or never served), also after a settle. */
  refund(): void;
}

interface Entry {
  at: number;
  tokens: number;
  /** 1 for a request; 0 for tokens charged later, when a request that outlived the window settled. */
  requests: 0 | 1;
  /** Still counted: neither refunded nor out of the window. */
  live: boolean;
}

/** One key's requests in the window, oldest first, with running totals of the live ones. */
interface Window {
  entries: Entry[];
  /** Entries before this index have left the window. */
  head: number;
  count: number;
  tokens: number;
}

const NOOP: Admission = { headers: {}, settle: () => {}, refund: () => {} };

/**
 * What the gateway admits requests with: {@link RateLimiter} in the relay's memory, or `RedisRateLimiter`
 * shared by every relay. An admission refused throws 429 (`rate_limit_requests`, `rate_limit_tokens`).
 */
export interface Limiter {
  /** `budget`: what a budgeted key's request asks of its budgets (else its estimate, whole). */
  admit(key: KeyLimits, estimatedTokens: number, budget?: BudgetAsk): Admission | Promise<Admission>;
  /** The `x-ratelimit-*` headers of a limited key (empty for an unlimited one). */
  headers(key: KeyLimits): Record<string, string> | Promise<Record<string, string>>;
  /** Why limits are not what they should be now (for `/health`), or null. */
  readonly problem?: string | null;
  /** Whether the limits are every relay's (Redis) or this relay's own. */
  readonly scope?: "shared" | "relay";
  /** Tokens a budget line has used (and reserved) in its current period. */
  spent(line: BudgetLine): Promise<number>;
  /** Told of each request a budget refused (an alert says the budget is spent), when set. */
  budgetExhausted?: (line: BudgetLine) => void;
  close?(): Promise<void>;
}

/**
 * Per-key requests-per-minute and tokens-per-minute limits over a sliding
 * 60-second window. `admit` checks and reserves in one synchronous step, so
 * concurrent requests can never overshoot a limit. The totals are kept as the
 * window moves, so admitting costs the same however busy a key is; a key with
 * nothing left in its window is forgotten.
 */
export class RateLimiter implements Limiter {
  private readonly windows = new Map<string, Window>();
  private lastSweep: number;

  readonly scope = "relay";
  budgetExhausted?: (line: BudgetLine) => void;

  constructor(
    private readonly now: () => number = Date.now,
    private readonly windowMs = 60_000,
    /** The keys' token budgets (by default, each line counted from zero: no usage counts to read). */
    private readonly budgets = new BudgetBook(async () => 0, now),
  ) {
    this.lastSweep = now();
  }

  /** Once a window's length, keys that went quiet are dropped (spread over requests: constant per request on average). */
  private sweep(): void {
    const now = this.now();
    if (now - this.lastSweep < this.windowMs) return;
    this.lastSweep = now;
    for (const id of [...this.windows.keys()]) this.window(id);
  }

  /** The key's window with what is older than 60 seconds taken out; undefined when nothing is left. */
  private window(keyId: string): Window | undefined {
    const w = this.windows.get(keyId);
    if (!w) return undefined;
    const cutoff = this.now() - this.windowMs;
    while (w.head < w.entries.length && w.entries[w.head]!.at <= cutoff) {
      const e = w.entries[w.head++]!;
      if (e.live) {
        e.live = false;
        w.count -= e.requests;
        w.tokens -= e.tokens;
      }
    }
    if (w.head >= w.entries.length) {
      this.windows.delete(keyId);
      return undefined;
    }
    if (w.head > 64 && w.head * 2 > w.entries.length) {
      w.entries = w.entries.slice(w.head);
      w.head = 0;
    }
    return w;
  }

  /** Live entries, oldest first (only when a refusal must say how long to wait). */
  private live(w: Window): Entry[] {
    return w.entries.slice(w.head).filter((e) => e.live);
  }

  /** The key's window, made when it has none. */
  private windowOf(keyId: string): Window {
    let w = this.window(keyId);
    if (!w) {
      w = { entries: [], head: 0, count: 0, tokens: 0 };
      this.windows.set(keyId, w);
    }
    return w;
  }

  /**
   * Admits a request expected to use `estimatedTokens`, or throws 429 with the
   * time to wait. Keys without limits are always admitted and tracked not at all.
   */
  admit(key: KeyLimits & { budgets?: undefined }, estimatedTokens: number): Admission;
  admit(key: KeyLimits, estimatedTokens: number, budget?: BudgetAsk): Admission | Promise<Admission>;
  admit(key: KeyLimits, estimatedTokens: number, budget?: BudgetAsk): Admission | Promise<Admission> {
    const lines = key.budgets;
    if (lines?.length) {
      // A budget's count not held yet for this period is read first (once a line and period).
      const reading = this.budgets.prepare(lines);
      if (reading) return reading.then(() => this.admitNow(key, estimatedTokens, budget));
    }
    return this.admitNow(key, estimatedTokens, budget);
  }

  /** Checks and reserves in one synchronous step: the rate limits, then the budgets, then both are counted. */
  private admitNow(key: KeyLimits, estimatedTokens: number, budget?: BudgetAsk): Admission {
    const lines = key.budgets?.length ? key.budgets : undefined;
    if (key.rpm === null && key.tpm === null && !lines) return NOOP;
    this.sweep();
    const w = this.window(key.id);
    const count = w?.count ?? 0;
    const used = w?.tokens ?? 0;
    const now = this.now();
    if (key.rpm !== null && w && count >= key.rpm) {
      throw new LimitRefusal(requestsRefused(key.rpm, count, this.live(w).filter((e) => e.requests === 1)[count - key.rpm]!.at + this.windowMs - now), this.headersNow(key));
    }
    if (key.tpm !== null) {
      if (estimatedTokens > key.tpm) throw new LimitRefusal(tooLargeRefused(key.tpm, estimatedTokens, this.windowMs), this.headersNow(key));
      if (w && used + estimatedTokens > key.tpm) {
        let freed = 0;
        let waitMs = this.windowMs;
        for (const e of this.live(w)) {
          freed += e.tokens;
          if (used - freed + estimatedTokens <= key.tpm) {
            waitMs = e.at + this.windowMs - now;
            break;
          }
        }
        throw new LimitRefusal(tokensRefused(key.tpm, used, estimatedTokens, waitMs), this.headersNow(key));
      }
    }
    let reserved: Reservation | undefined;
    if (lines) {
      try {
        reserved = this.budgets.reserve(lines, budget ?? { want: estimatedTokens, least: estimatedTokens });
      } catch (err) {
        if (err instanceof BudgetRefusal) this.budgetExhausted?.(err.line);
        throw new LimitRefusal(err as MakinaError, this.headersNow(key));
      }
    }
    if (key.rpm === null && key.tpm === null) return budgetOnly(this.budgets, reserved!);
    const entry: Entry = { at: now, tokens: estimatedTokens, requests: 1, live: true };
    const target = w ?? this.windowOf(key.id);
    target.entries.push(entry);
    target.count++;
    target.tokens += estimatedTokens;
    let refunded = false;
    return {
      headers: { ...this.rateHeaders(key), ...budgetHeaders(reserved?.remaining) },
      granted: reserved?.granted,
      settle: (tokens) => {
        if (refunded || tokens === null) return;
        if (reserved) this.budgets.settle(reserved, tokens);
        // Age the window first: the request's own entry may have left it while it ran.
        this.window(key.id);
        if (entry.live) {
          target.tokens += tokens - entry.tokens;
          entry.tokens = tokens;
          return;
        }
        // The request outlived the window its admission counted in: what it really used is charged now,
        // in the window that is current when it ends.
        if (key.tpm === null || tokens <= 0) return;
        const current = this.windowOf(key.id);
        current.entries.push({ at: this.now(), tokens, requests: 0, live: true });
        current.tokens += tokens;
      },
      // A refund wins over a settle in either order: a refused request costs nothing,
      // even when the runtime counted its prompt before refusing it.
      refund: () => {
        if (refunded) return;
        refunded = true;
        if (reserved) this.budgets.refund(reserved);
        if (!entry.live) return;
        entry.live = false;
        target.count -= entry.requests;
        target.tokens -= entry.tokens;
      },
    };
  }

  /** The `x-ratelimit-*` and `x-budget-remaining-tokens` headers of a limited key (empty for an unlimited one). */
  headers(key: KeyLimits & { budgets?: undefined }): Record<string, string>;
  headers(key: KeyLimits): Record<string, string> | Promise<Record<string, string>>;
  headers(key: KeyLimits): Record<string, string> | Promise<Record<string, string>> {
    const reading = key.budgets?.length ? this.budgets.prepare(key.budgets) : undefined;
    return reading ? reading.then(() => this.headersNow(key)) : this.headersNow(key);
  }

  async spent(line: BudgetLine): Promise<number> {
    return this.budgets.spent(line);
  }

  private headersNow(key: KeyLimits): Record<string, string> {
    return { ...this.rateHeaders(key), ...budgetHeaders(key.budgets?.length ? this.budgets.remaining(key.budgets) : undefined) };
  }

  private rateHeaders(key: KeyLimits): Record<string, string> {
    if (key.rpm === null && key.tpm === null) return {};
    const w = this.window(key.id);
    const count = w?.count ?? 0;
    const used = w?.tokens ?? 0;
    let last = w ? w.entries.length - 1 : -1;
    while (w && last >= w.head && !w.entries[last]!.live) last--;
    const resetAll = w && last >= w.head ? w.entries[last]!.at + this.windowMs - this.now() : 0;
    return rateLimitHeaders(key, count, used, resetAll);
  }

  /** Keys with requests in their window (for tests: idle keys are forgotten). */
  get trackedKeys(): number {
    return this.windows.size;
  }
}

/** The admission of a key with budgets and no rate limits. */
function budgetOnly(book: BudgetBook, reserved: Reservation): Admission {
  let refunded = false;
  return {
    headers: budgetHeaders(reserved.remaining),
    granted: reserved.granted,
    settle: (tokens) => {
      if (!refunded && tokens !== null) book.settle(reserved, tokens);
    },
    refund: () => {
      if (refunded) return;
      refunded = true;
      book.refund(reserved);
    },
  };
}

/**
 * A limited key's `x-ratelimit-*` headers, from its window: `count` requests and `used` tokens in it, and
 * `resetMs` until the newest of them leaves it.
 */
export function rateLimitHeaders(key: KeyLimits, count: number, used: number, resetMs: number): Record<string, string> {
  const out: Record<string, string> = {};
  if (key.rpm !== null) {
    out["x-ratelimit-limit-requests"] = String(key.rpm);
    out["x-ratelimit-remaining-requests"] = String(Math.max(0, key.rpm - count));
    out["x-ratelimit-reset-requests"] = formatDuration(resetMs);
  }
  if (key.tpm !== null) {
    out["x-ratelimit-limit-tokens"] = String(key.tpm);
    out["x-ratelimit-remaining-tokens"] = String(Math.max(0, key.tpm - used));
    out["x-ratelimit-reset-tokens"] = formatDuration(used > 0 ? resetMs : 0);
  }
  return out;
}

/** 429: the key's requests per minute are used up; `waitMs` until one leaves the window. */
export function requestsRefused(rpm: number, count: number, waitMs: number): MakinaError {
  return new MakinaError("rate_limit_requests", `Rate limit reached for requests per minute: limit ${rpm}, used ${count}. Please try again in ${formatDuration(waitMs)}.`, {
    retryAfterMs: Math.max(1, waitMs),
  });
}

/** 429: one request estimated at more tokens than the key may use in a whole window. */
export function tooLargeRefused(tpm: number, estimate: number, windowMs: number): MakinaError {
  return new MakinaError("rate_limit_tokens", `Request too large for tokens per minute: limit ${tpm}, requested about ${estimate}. Lower max_tokens or shorten the messages.`, {
    retryAfterMs: windowMs,
  });
}

/** 429: the key's tokens per minute would be exceeded; `waitMs` until enough leave the window. */
export function tokensRefused(tpm: number, used: number, estimate: number, waitMs: number): MakinaError {
  return new MakinaError("rate_limit_tokens", `Rate limit reached for tokens per minute: limit ${tpm}, used ${used}, requested about ${estimate}. Please try again in ${formatDuration(waitMs)}.`, {
    retryAfterMs: Math.max(1, waitMs),
  });
}

/**
 * A 429 of a key's rate limits, with the `x-ratelimit-*` headers of the count that refused it (on several
 * relays, the shared one): a client pacing itself by the headers reads 0 left, never a count taken before.
 */
export class LimitRefusal extends MakinaError {
  constructor(
    refused: MakinaError,
    readonly headers: Record<string, string>,
  ) {
    super(refused.code, refused.message, { retryAfterMs: refused.retryAfterMs });
  }
}

/** A duration the way the vendor writes reset headers: `17ms`, `1s`, `1.5s`, `6m0s`. */
export function formatDuration(ms: number): string {
  const v = Math.max(0, Math.ceil(ms));
  if (v < 1000) return `${v}ms`;
  const totalSeconds = v / 1000;
  if (totalSeconds < 60) return `${Number(totalSeconds.toFixed(3))}s`;
  const minutes = Math.floor(totalSeconds / 60);
  return `${minutes}m${Math.round(totalSeconds - minutes * 60)}s`;
}

/** Tokens a chat request is expected to use before its prompt is tokenized: about 4 characters a token, plus the completion. */
export function estimateTokens(messages: { content: string }[], maxTokens: number | null, defaultCompletion: number, embed?: readonly { text: string; tokens: readonly number[] }[], rerank?: { query: string; documents: readonly string[] }): number {
  // An embeddings request generates nothing: its inputs are all it uses.
  if (embed?.length) return embed.reduce((n, e) => n + (e.tokens.length || Math.ceil(e.text.length / 4) + 1), 0);
  // Nor does a rerank request: a reranker reads the query with each document.
  if (rerank) return rerank.documents.reduce((n, d) => n + Math.ceil((rerank.query.length + d.length) / 4) + 2, 0);
  const chars = messages.reduce((n, m) => n + m.content.length, 0);
  return Math.ceil(chars / 4) + messages.length * 4 + (maxTokens ?? defaultCompletion);
}
