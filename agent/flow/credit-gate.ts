import { MakinaError } from "../../proto/index.js";

/**
 * Per-request flow control: a chunk may be sent only against credit from its reader. `take` waits while no
 * credit is left. Credit counts chunks (the link) or bytes (a GGUF model process's frames, see gguf-wire.ts):
 * a sender may spend more than is left when some is, so one large chunk never waits forever.
 */
export class CreditGate {
  private wake: (() => void) | undefined;

  constructor(private credits: number) {}

  /** Credit left (0 or less: the next chunk waits). */
  get left(): number {
    return this.credits;
  }

  /** True while a chunk waits for credit (the reader is slower than generation). */
  get waiting(): boolean {
    return this.wake !== undefined;
  }

  add(n: number): void {
    this.credits += n;
    this.wake?.();
  }

  /** Waits until some credit is left, then spends one. */
  async take(signal: AbortSignal): Promise<void> {
    if (this.credits <= 0) await this.available(signal);
    this.credits--;
  }

  /** Spends `n`, which may be more than is left. */
  spend(n: number): void {
    this.credits -= n;
  }

  /** Resolves once some credit is left; rejects when `signal` aborts first. */
  async available(signal: AbortSignal): Promise<void> {
    while (this.credits <= 0) {
      if (signal.aborted) throw MakinaError.from(signal.reason);
      await new Promise<void>((resolve) => {
        const done = () => {
          signal.removeEventListener("abort", done);
          this.wake = undefined;
          resolve();
        };
        this.wake = done;
        signal.addEventListener("abort", done, { once: true });
      });
    }
  }
}
