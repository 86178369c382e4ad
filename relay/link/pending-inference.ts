import { MakinaError, type TokenEvent } from "../../proto/index.js";

/**
 * The relay's side of one in-flight request: a queue of events that the agent
 * fills and the HTTP handler drains. The queue can never hold more than the
 * request's credit window, because the agent sends only against credits.
 */
export class PendingInference {
  private readonly queue: TokenEvent[] = [];
  private failure: MakinaError | undefined;
  private wake: (() => void) | undefined;
  /** True once the first event (chunk or end) arrived. */
  started = false;
  /** Unix ms since when the consumer has been waiting for an event that has not come; 0 while it is not waiting. */
  waitingSince = 0;

  constructor(private readonly window: number) {}

  /** Adds an event from the link; a flood past the window is a protocol violation. */
  push(event: TokenEvent): void {
    if (this.failure) return;
    this.started = true;
    if (this.queue.length >= this.window + 1) {
      this.fail(new MakinaError("internal_error", "The agent sent more than its flow-control window allows."));
      return;
    }
    this.queue.push(event);
    this.waitingSince = 0;
    this.wake?.();
  }

  /** Ends the request with an error; events already queued are dropped. */
  fail(err: MakinaError): void {
    if (this.failure) return;
    this.failure = err;
    this.queue.length = 0;
    this.wake?.();
  }

  /** The next event, waiting for one; rejects once the request failed. */
  async next(): Promise<TokenEvent> {
    for (;;) {
      if (this.failure) throw this.failure;
      const ev = this.queue.shift();
      if (ev) return ev;
      this.waitingSince = Date.now();
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
      this.waitingSince = 0;
    }
  }
}
