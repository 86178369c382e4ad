/**
 * When a batch of queued work runs: on the next turn of the event loop after the first piece is queued (with
 * every piece queued in that turn), and, while a batch runs, right after it for what came meanwhile. One batch
 * runs at a time. The base of {@link BatchLoader} and {@link BatchWriter}.
 */
export abstract class TurnBatcher {
  private running = false;
  private scheduled = false;

  /** Whether work is queued. */
  protected abstract get pending(): boolean;

  /** Takes a batch of the queued work and runs it (settling each piece itself; it never throws). */
  protected abstract runBatch(): Promise<void>;

  /** Call after queueing a piece. */
  protected schedule(): void {
    if (this.running || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.running || !this.pending) return;
    this.running = true;
    try {
      await this.runBatch();
    } finally {
      this.running = false;
      if (this.pending) this.schedule();
    }
  }
}
