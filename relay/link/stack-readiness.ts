import type { MachineMemory, RuntimeState } from "../../proto/index.js";

/** What a machine has free for one more model: a place under its `--max-loaded`, and bytes of its memory budget. */
export interface Room {
  slot: boolean;
  bytes: number;
}

/**
 * What a machine's link says of each stack's runtime, as routing reads it: which stacks take requests (`ready`:
 * ready, or on demand and unloaded, unloading or loading from there, the machine loading it for the requests that
 * wait), which of those have their model loaded, and when each last became ready. A runtime restarting or failed
 * takes no requests: they get 503 `runtime_unavailable`.
 */
export class StackReadiness {
  /** Stacks whose runtimes this machine serves now: ready, or on demand (loaded by the next request). */
  readonly ready = new Set<string>();
  /** On-demand stacks last said unloaded (or unloading): a load from there is theirs, not a restart. */
  private readonly unloaded = new Set<string>();
  /** When each stack's runtime was last said ready (`performance.now()`). */
  private readonly readyAt = new Map<string, number>();
  /** What the machine has free for one more model (see `roomToLoad`). */
  private room: Room = { slot: true, bytes: 0 };

  /** The machine said a stack's runtime is now `state`. */
  said(stackId: string, state: RuntimeState): void {
    const onDemandLoad = state === "loading" && this.unloaded.has(stackId);
    if (state === "unloaded" || state === "unloading") this.unloaded.add(stackId);
    else if (!onDemandLoad) this.unloaded.delete(stackId);
    if (state === "ready" || state === "unloaded" || state === "unloading" || onDemandLoad) this.ready.add(stackId);
    else this.ready.delete(stackId);
    if (state === "ready") this.readyAt.set(stackId, performance.now());
  }

  /** Whether a stack's model is loaded now (not an on-demand stack unloaded, unloading, or loading from there). */
  loaded(stackId: string): boolean {
    return this.ready.has(stackId) && !this.unloaded.has(stackId);
  }

  /** When the machine last said a stack's runtime is ready: the end of its last load. */
  readySince(stackId: string): number | undefined {
    return this.readyAt.get(stackId);
  }

  /** The machine's inventory said what its runtimes count against its memory budget. */
  sawMemory(memory: MachineMemory | undefined): void {
    this.room = !memory
      ? { slot: true, bytes: 0 }
      : { slot: memory.maxLoaded === 0 || memory.loaded < memory.maxLoaded, bytes: memory.budgetBytes > 0 ? Math.max(0, memory.budgetBytes - memory.usedBytes) : Infinity };
  }

  /**
   * What the machine has free for one more model, as its last inventory said: a place under `--max-loaded`, and its
   * memory budget's bytes left (Infinity: no budget; 0 while it has said nothing, as an agent older than budgets).
   */
  roomToLoad(): Room {
    return this.room;
  }

  /** The link is gone: nothing is served through it. */
  clear(): void {
    this.ready.clear();
    this.unloaded.clear();
    this.readyAt.clear();
    this.room = { slot: true, bytes: 0 };
  }
}
