import type { RuntimeState } from "../../proto/index.js";

/** Runtime states are stored and announced at most this often per link (the latest of each stack). */
const RUNTIME_STATE_MIN_INTERVAL_MS = 250;

/**
 * The runtime states one link's agent reports, on their way to the database: routing follows a state at once
 * (the session's ready stacks), while what is stored, logged and announced follows it at most every 250 ms per
 * link, the latest state of each stack, and only when the agent's word changed (a state sent again is dropped).
 */
export class RuntimeStateBatch {
  private readonly states = new Map<string, { state: RuntimeState; error: string | null }>();
  /** The last state the agent sent of each stack. */
  private readonly lastReceived = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private writtenAt = 0;
  private closed = false;

  constructor(private readonly write: (stackId: string, state: RuntimeState, error: string | null) => void) {}

  /** The agent's word on a stack's runtime. */
  received(stackId: string, state: RuntimeState, error: string | null): void {
    const key = `${state}\u0000${error ?? ""}`;
    if (this.lastReceived.get(stackId) === key) return;
    this.lastReceived.set(stackId, key);
    this.states.set(stackId, { state, error });
    if (!this.timer) this.timer = setTimeout(() => this.due(), Math.max(0, this.writtenAt + RUNTIME_STATE_MIN_INTERVAL_MS - Date.now()));
  }

  /** The relay wrote a stack's runtime state itself (a deployment's end): what the agent said before it is not written after it. */
  forget(stackId: string): void {
    this.states.delete(stackId);
    this.lastReceived.delete(stackId);
  }

  /** The link ended: the agent's last word is written even when it came before the next write was due. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.flush();
  }

  private due(): void {
    this.timer = undefined;
    if (!this.closed) this.flush();
  }

  private flush(): void {
    this.writtenAt = Date.now();
    for (const [stackId, { state, error }] of this.states) this.write(stackId, state, error);
    this.states.clear();
  }
}
