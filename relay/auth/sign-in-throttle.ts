/** Options of {@link SignInThrottle}. */
export interface SignInThrottleOptions {
  /** Failed sign-ins of one login (or one address) allowed before it waits. @default 5 */
  freeFailures?: number;
  /** The first wait, doubled with each further failure. @default 30000 */
  baseDelayMs?: number;
  /** The longest wait. @default 900000 (15 minutes) */
  maxDelayMs?: number;
  /** A record with no failure for this long is forgotten. @default 900000 */
  forgetAfterMs?: number;
  now?: () => number;
}

interface Record {
  failures: number;
  lastFailureAt: number;
  blockedUntil: number;
}

/**
 * Slows down password guessing: after a few failed sign-ins for a login (or
 * from an address), each further try must wait, doubling up to a cap. A success
 * clears the login's record. Memory stays bounded: idle records are forgotten.
 */
export class SignInThrottle {
  private readonly records = new Map<string, Record>();
  private readonly o: Required<SignInThrottleOptions>;

  constructor(options: SignInThrottleOptions = {}) {
    this.o = { freeFailures: 5, baseDelayMs: 30_000, maxDelayMs: 900_000, forgetAfterMs: 900_000, now: Date.now, ...options };
  }

  /** Milliseconds until any of `keys` may try again; 0 when none is held back. */
  retryAfterMs(keys: string[]): number {
    const now = this.o.now();
    let wait = 0;
    for (const key of keys) {
      const r = this.records.get(key);
      if (r) wait = Math.max(wait, r.blockedUntil - now);
    }
    return Math.max(0, wait);
  }

  failed(keys: string[]): void {
    const now = this.o.now();
    this.forgetIdle(now);
    for (const key of keys) {
      const r = this.records.get(key) ?? { failures: 0, lastFailureAt: now, blockedUntil: 0 };
      r.failures++;
      r.lastFailureAt = now;
      const over = r.failures - this.o.freeFailures;
      if (over >= 0) r.blockedUntil = now + Math.min(this.o.maxDelayMs, this.o.baseDelayMs * 2 ** Math.min(over, 20));
      this.records.set(key, r);
    }
  }

  succeeded(key: string): void {
    this.records.delete(key);
  }

  private forgetIdle(now: number): void {
    for (const [key, r] of this.records) {
      if (now - r.lastFailureAt > this.o.forgetAfterMs && now >= r.blockedUntil) this.records.delete(key);
    }
  }
}
