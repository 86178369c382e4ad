/** Callers waiting for something to change (room on the machine, the last request ending), each woken once. */
export class WakeList {
  private readonly waiting = new Set<() => void>();

  /** Resolves at the next {@link wake}, or once `signal` aborts (at once if it has). */
  next(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        this.waiting.delete(wake);
        signal.removeEventListener("abort", wake);
        resolve();
      };
      this.waiting.add(wake);
      signal.addEventListener("abort", wake, { once: true });
    });
  }

  /** Wakes every caller waiting now. */
  wake(): void {
    for (const wake of [...this.waiting]) wake();
  }
}
