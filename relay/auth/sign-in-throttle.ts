import type { FailureCount } from "../store/index.js";

/** Options of {@link SignInThrottle}. */
export interface SignInThrottleOptions {
  /** Failed sign-ins under one key allowed before it waits. @default 5 */
  freeFailures?: number;
}

/** A count with no failure for this long is forgotten (it starts again from one): the longest wait. */
export const FORGET_FAILURES_AFTER_MS = 900_000;

/** The first wait, doubled with each further failure, and the longest. */
const FIRST_DELAY_MS = 30_000;
const MAX_DELAY_MS = FORGET_FAILURES_AFTER_MS;

/**
 * Slows down password guessing: after a few failed sign-ins under a key (a login, an address), each further try
 * must wait from the last failure: 30 s, doubling up to 15 minutes. The rule only: the counts are kept by the caller.
 */
export class SignInThrottle {
  private readonly freeFailures: number;

  constructor(options: SignInThrottleOptions = {}) {
    this.freeFailures = options.freeFailures ?? 5;
  }

  /** Milliseconds from `now` until a key with this count may try again; 0 when it is not held back. */
  retryAfterMs(count: FailureCount | undefined, now: number): number {
    if (count === undefined || now - count.lastAt > FORGET_FAILURES_AFTER_MS) return 0;
    const over = count.failures - this.freeFailures;
    if (over < 0) return 0;
    return Math.max(0, count.lastAt + Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** Math.min(over, 20)) - now);
  }
}
