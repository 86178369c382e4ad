import { MakinaError } from "../../proto/index.js";
import { formatDuration, type KeyLimits } from "./rate-limiter.js";

/** One key's refused requests: the count in the current window-long bucket and in the one before it. */
interface Tally {
  bucket: number;
  current: number;
  previous: number;
}

/** Refusals a limited key may always have in a window, however low its RPM: a client being written makes mistakes. */
const MIN_REFUSALS = 60;

/** The answers that count as refused: the request was wrong (400, 403, 404, 413, 415), not turned away for load. */
const REFUSED_STATUSES = new Set([400, 403, 404, 413, 415]);

/**
 * Refused requests of rate-limited keys, counted apart from their quota.
 *
 * `decisions.md` says a refused request consumes no quota, so a client's typo never costs it a real request.
 * But a key that sends nothing but refusals (a loop of made-up model names, malformed bodies, schemas that do
 * not check) would have the relay read and check each of them without bound. So a limited key may have as
 * many requests refused in a minute as its requests-per-minute limit (at least 60, one a second, so a low-RPM
 * key being debugged is not locked out by its first typos); past that its requests answer 429 before their
 * body is read, until the minute has moved on. Its quota is untouched all along, and a key without an RPM
 * limit is not counted.
 *
 * Kept per relay, in memory (a defence of this relay's CPU, not an accounting): two window-long buckets per
 * key, the previous one weighted by how much of it is still inside the sliding window.
 */
export class RefusalBudget {
  private readonly tallies = new Map<string, Tally>();
  private lastSweep: number;

  constructor(
    private readonly now: () => number = Date.now,
    private readonly windowMs = 60_000,
  ) {
    this.lastSweep = now();
  }

  /** Throws 429 `rate_limit_requests` when the key has had as many requests refused in the window as its RPM (at least 60). */
  check(key: KeyLimits): void {
    if (key.rpm === null || !this.tallies.has(key.id)) return;
    const now = this.now();
    const t = this.tally(key.id, now);
    if (!t) return;
    const limit = Math.max(key.rpm, MIN_REFUSALS);
    const elapsed = now - t.bucket * this.windowMs;
    const count = t.current + t.previous * (1 - elapsed / this.windowMs);
    if (count < limit) return;
    // Until the weighted count falls below the limit: within this bucket when the previous one carries the excess,
    // else into the next one, where this bucket's refusals fade as the window moves past them.
    const waitMs =
      t.current < limit ? this.windowMs * (1 - (limit - t.current) / t.previous) - elapsed : this.windowMs - elapsed + this.windowMs * (1 - limit / t.current);
    const retryAfterMs = Math.max(1, Math.ceil(waitMs));
    throw new MakinaError(
      "rate_limit_requests",
      `Too many refused requests: this key had ${Math.floor(count)} requests refused in the last minute (at most ${limit}; refused requests do not use its quota of ${key.rpm} a minute, but are limited apart). Correct the requests and try again in ${formatDuration(retryAfterMs)}.`,
      { retryAfterMs },
    );
  }

  /** Counts the key's request if its answer was a refusal (`status` is the HTTP status it got). */
  record(key: KeyLimits, status: number): void {
    if (key.rpm === null || !REFUSED_STATUSES.has(status)) return;
    const now = this.now();
    this.sweep(now);
    const bucket = Math.floor(now / this.windowMs);
    let t = this.tally(key.id, now);
    if (!t) {
      t = { bucket, current: 0, previous: 0 };
      this.tallies.set(key.id, t);
    }
    t.current++;
  }

  /** The key's tally moved to the current bucket; undefined when it has nothing left in the window. */
  private tally(keyId: string, now: number): Tally | undefined {
    const t = this.tallies.get(keyId);
    if (!t) return undefined;
    const bucket = Math.floor(now / this.windowMs);
    if (bucket > t.bucket) {
      t.previous = bucket === t.bucket + 1 ? t.current : 0;
      t.current = 0;
      t.bucket = bucket;
    }
    if (t.current === 0 && t.previous === 0) {
      this.tallies.delete(keyId);
      return undefined;
    }
    return t;
  }

  /** Once a window's length, keys with nothing left in theirs are forgotten. */
  private sweep(now: number): void {
    if (now - this.lastSweep < this.windowMs) return;
    this.lastSweep = now;
    for (const id of [...this.tallies.keys()]) this.tally(id, now);
  }

  /** Keys with refusals in their window (for tests: quiet keys are forgotten). */
  get trackedKeys(): number {
    return this.tallies.size;
  }
}
