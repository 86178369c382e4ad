/** Options of {@link Backoff}. */
export interface BackoffOptions {
  /** First delay, ms. */
  minMs: number;
  /** Cap, ms. */
  maxMs: number;
  /** Random source in [0, 1); injectable for tests. @default Math.random */
  random?: () => number;
  /**
   * The first delay (after a reset) is uniform in [min, min + firstSpreadMs] rather than exactly min: machines
   * that lost their relay at the same moment do not all dial again at the same moment. @default 0
   */
  firstSpreadMs?: number;
}

/** Capped exponential backoff with full jitter: delay n is uniform in [min, min(max, min·2ⁿ)]. */
export class Backoff {
  private attempt = 0;

  constructor(private readonly options: BackoffOptions) {}

  next(): number {
    const { minMs, maxMs, random = Math.random, firstSpreadMs = 0 } = this.options;
    if (this.attempt === 0 && firstSpreadMs > 0) {
      // The attempts after go on doubling from beyond the spread, so the machines stay spread out.
      this.attempt = Math.max(1, Math.ceil(Math.log2((minMs + firstSpreadMs) / minMs)));
      return Math.min(maxMs, Math.round(minMs + random() * firstSpreadMs));
    }
    const ceiling = Math.min(maxMs, minMs * 2 ** Math.min(this.attempt, 30));
    this.attempt++;
    return Math.round(minMs + random() * (ceiling - minMs));
  }

  reset(): void {
    this.attempt = 0;
  }
}
