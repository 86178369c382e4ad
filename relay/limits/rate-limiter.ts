import { MakinaError } from "../../proto/index.js";

/** The limits of one key (`null` = unlimited). */
export interface KeyLimits {
  id: string;
  rpm: number | null;
  tpm: number | null;
}

/** A request admitted against a key's limits. */
export interface Admission {
  /** Replaces the token estimate with what the request really used; `null` keeps the estimate. Ignored after a refund. */
  settle(tokens: number | null): void;
  /** Gives back everything the request took (it was refused or never served), also after a settle. */
  refund(): void;
}

interface Entry {
  at: number;
  tokens: number;
}

const NOOP: Admission = { settle: () => {}, refund: () => {} };

/**
 * Per-key requests-per-minute and tokens-per-minute limits over a sliding
 * 60-second window. `admit` checks and reserves in one synchronous step, so
 * concurrent requests can never overshoot a limit.
 */
export class RateLimiter {
  private readonly windows = new Map<string, Entry[]>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly windowMs = 60_000,
  ) {}

  private entries(keyId: string): Entry[] {
    const list = this.windows.get(keyId);
    if (!list) return [];
    const cutoff = this.now() - this.windowMs;
    let drop = 0;
    while (drop < list.length && list[drop]!.at <= cutoff) drop++;
    if (drop) list.splice(0, drop);
    if (list.length === 0) this.windows.delete(keyId);
    return list;
  }

  /**
   * Admits a request expected to use `estimatedTokens`, or throws 429 with the
   * time to wait. Keys without limits are always admitted and tracked not at all.
   */
  admit(key: KeyLimits, estimatedTokens: number): Admission {
    if (key.rpm === null && key.tpm === null) return NOOP;
    const list = this.entries(key.id);
    const now = this.now();
    if (key.rpm !== null && list.length >= key.rpm) {
      const waitMs = list[list.length - key.rpm]!.at + this.windowMs - now;
      throw new MakinaError("rate_limit_requests", `Rate limit reached for requests per minute: limit ${key.rpm}, used ${list.length}. Please try again in ${formatDuration(waitMs)}.`, {
        retryAfterMs: Math.max(1, waitMs),
      });
    }
    if (key.tpm !== null) {
      const used = list.reduce((sum, e) => sum + e.tokens, 0);
      if (estimatedTokens > key.tpm) {
        throw new MakinaError(
          "rate_limit_tokens",
          `Request too large for tokens per minute: limit ${key.tpm}, requested about ${estimatedTokens}. Lower max_tokens or shorten the messages.`,
          { retryAfterMs: this.windowMs },
        );
      }
      if (used + estimatedTokens > key.tpm) {
        let freed = 0;
        let waitMs = this.windowMs;
        for (const e of list) {
          freed += e.tokens;
          if (used - freed + estimatedTokens <= key.tpm) {
            waitMs = e.at + this.windowMs - now;
            break;
          }
        }
        throw new MakinaError("rate_limit_tokens", `Rate limit reached for tokens per minute: limit ${key.tpm}, used ${used}, requested about ${estimatedTokens}. Please try again in ${formatDuration(waitMs)}.`, {
          retryAfterMs: Math.max(1, waitMs),
        });
      }
    }
    const entry: Entry = { at: now, tokens: estimatedTokens };
    if (!this.windows.has(key.id)) this.windows.set(key.id, list);
    list.push(entry);
    let refunded = false;
    return {
      settle: (tokens) => {
        if (!refunded && tokens !== null) entry.tokens = tokens;
      },
      // A refund wins over a settle in either order: a refused request costs nothing,
      // even when the runtime counted its prompt before refusing it.
      refund: () => {
        if (refunded) return;
        refunded = true;
        const current = this.windows.get(key.id);
        const i = current?.indexOf(entry) ?? -1;
        if (i >= 0) current!.splice(i, 1);
      },
    };
  }

  /** The `x-ratelimit-*` headers of a limited key (empty for an unlimited one). */
  headers(key: KeyLimits): Record<string, string> {
    const out: Record<string, string> = {};
    if (key.rpm === null && key.tpm === null) return out;
    const list = this.entries(key.id);
    const now = this.now();
    const resetAll = list.length ? list[list.length - 1]!.at + this.windowMs - now : 0;
    if (key.rpm !== null) {
      out["x-ratelimit-limit-requests"] = String(key.rpm);
      out["x-ratelimit-remaining-requests"] = String(Math.max(0, key.rpm - list.length));
      out["x-ratelimit-reset-requests"] = formatDuration(resetAll);
    }
    if (key.tpm !== null) {
      const used = list.reduce((sum, e) => sum + e.tokens, 0);
      out["x-ratelimit-limit-tokens"] = String(key.tpm);
      out["x-ratelimit-remaining-tokens"] = String(Math.max(0, key.tpm - used));
      out["x-ratelimit-reset-tokens"] = formatDuration(list.find((e) => e.tokens > 0) ? resetAll : 0);
    }
    return out;
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
export function estimateTokens(messages: { content: string }[], maxTokens: number | null, defaultCompletion: number): number {
  const chars = messages.reduce((n, m) => n + m.content.length, 0);
  return Math.ceil(chars / 4) + messages.length * 4 + (maxTokens ?? defaultCompletion);
}
