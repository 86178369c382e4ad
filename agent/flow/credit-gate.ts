import { MakinaError } from "../../proto/index.js";

/**
 * Per-request flow control on the agent: a chunk may be sent only against a
 * credit from the relay. `take` waits while the window is empty.
 */
export class CreditGate {
  private wake: (() => void) | undefined;

  constructor(private credits: number) {}

  /** True while a chunk waits for credit (the relay's client is slower than generation). */
  get waiting(): boolean {
    return this.wake !== undefined;
  }

  add(n: number): void {
    this.credits += n;
    this.wake?.();
  }

  async take(signal: AbortSignal): Promise<void> {
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
    this.credits--;
  }
}
