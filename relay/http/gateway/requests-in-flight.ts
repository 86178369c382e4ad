import { MakinaError } from "../../../proto/index.js";

/**
 * The gateway's requests in flight, each by the controller that cancels it: ended together, each answered 503
 * with Retry-After (or its stream with the incomplete stream's error event), when the relay's drain period is
 * over. A set rather than a listener per request on one signal: adding and removing one costs a request nothing.
 */
export class RequestsInFlight {
  private readonly controllers = new Set<AbortController>();
  private ended: MakinaError | undefined;

  /** Tracks a request's controller (ended at once when the drain period is already over). */
  add(controller: AbortController): void {
    if (this.ended) controller.abort(this.ended);
    else this.controllers.add(controller);
  }

  /** Whether this request was ended by the relay's stop (its drain period over), not by its client or its time. */
  endedByRelay(controller: AbortController): boolean {
    return this.ended !== undefined && controller.signal.reason === this.ended;
  }

  delete(controller: AbortController): void {
    this.controllers.delete(controller);
  }

  /** Ends every request in flight, and any that comes after. */
  endAll(): void {
    this.ended = new MakinaError("runtime_unavailable", "The relay is stopping: this request did not finish within its drain period. Retry it.", { retryAfterMs: 1000 });
    for (const controller of this.controllers) controller.abort(this.ended);
    this.controllers.clear();
  }
}
