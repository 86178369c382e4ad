import type { RuntimeState } from "../../proto/index.js";

/** Largest context (tokens) a machine is believed to say: what the stacks' `context_size` column holds. */
const MAX_CONTEXT_SIZE = 2 ** 31 - 1;

/** Runtime states are stored and announced at most this often per link (the latest of each stack). */
const RUNTIME_STATE_MIN_INTERVAL_MS = 250;
/**
 * At most this many stacks' states are written per link each time: a machine flipping the states of many stacks
 * costs the database 16 writes per 250 ms at most, whatever their number (the others wait their turn, each
 * stack's latest state kept).
 */
export const MAX_STATES_PER_WRITE = 16;

/**
 * The runtime states one link's agent reports, on their way to the database: routing follows a state at once
 * (the session's ready stacks), while what is stored, logged and announced follows it at most every 250 ms per
 * link, the latest state of each stack, at most 16 stacks each time (the rest at the next), and only when the
 * agent's word changed (a state sent again is dropped). A context size the agent said with a load is written with
 * the stack's next write, even when a later state (an unload at once) took that load's place.
 */
export class RuntimeStateBatch {
  private readonly states = new Map<string, { state: RuntimeState; error: string | null; contextSize: number | undefined }>();
  /** The last state the agent sent of each stack. */
  private readonly lastReceived = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private writtenAt = 0;
  private closed = false;

  constructor(private readonly write: (stackId: string, state: RuntimeState, error: string | null, contextSize: number | undefined) => void) {}

  /**
   * The agent's word on a stack's runtime (`said`: the context a load ended with, in tokens; taken with `ready` only,
   * and only as a whole number the database holds).
   */
  received(stackId: string, state: RuntimeState, error: string | null, said?: number): void {
    const contextSize = state === "ready" && said !== undefined && Number.isInteger(said) && said > 0 && said <= MAX_CONTEXT_SIZE ? said : undefined;
    const key = `${state}\u0000${error ?? ""}\u0000${contextSize ?? ""}`;
    if (this.lastReceived.get(stackId) === key) return;
    this.lastReceived.set(stackId, key);
    this.states.set(stackId, { state, error, contextSize: contextSize ?? this.states.get(stackId)?.contextSize });
    this.schedule();
  }

  private schedule(): void {
    if (!this.timer && !this.closed) this.timer = setTimeout(() => this.due(), Math.max(0, this.writtenAt + RUNTIME_STATE_MIN_INTERVAL_MS - Date.now()));
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
    if (this.closed) return;
    this.flush(MAX_STATES_PER_WRITE);
    if (this.states.size > 0) this.schedule();
  }

  /** Writes the states waiting, the first `most` of them (those waiting longest). */
  private flush(most = Infinity): void {
    this.writtenAt = Date.now();
    let n = 0;
    for (const [stackId, { state, error, contextSize }] of this.states) {
      if (n++ >= most) break;
      this.states.delete(stackId);
      this.write(stackId, state, error, contextSize);
    }
  }
}
