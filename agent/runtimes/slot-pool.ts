import { FairQueue, MakinaError, TIER_AGING_MS, type QueueEntry, type ServiceTier } from "../../proto/index.js";

interface Waiter<T> {
  resolve: (slot: T) => void;
  signal?: AbortSignal;
  onAbort: () => void;
}

/** Who asks for a slot: the tier of its request and whose turn it takes (its key, as the relay named it). */
export interface SlotAsk {
  tier?: ServiceTier;
  owner?: string;
}

/**
 * A fixed set of slots (for example a model's context sequences) handed out one request at a time: while
 * requests wait, a freed slot goes to the next in a {@link FairQueue}'s order (by tier, keys taking turns, aged).
 */
export class SlotPool<T> {
  private readonly free: T[];
  private readonly waiters = new FairQueue<Waiter<T>>(TIER_AGING_MS);

  constructor(slots: T[]) {
    this.free = [...slots];
  }

  /** Requests waiting for a slot. */
  get waiting(): number {
    return this.waiters.size;
  }

  /** Waits for a free slot; rejects with `canceled` when `signal` aborts first. */
  acquire(signal?: AbortSignal, ask: SlotAsk = {}): Promise<T> {
    if (signal?.aborted) return Promise.reject(MakinaError.from(signal.reason));
    const slot = this.free.pop();
    if (slot !== undefined) return Promise.resolve(slot);
    return new Promise<T>((resolve, reject) => {
      const waiter: Waiter<T> = {
        resolve,
        signal,
        onAbort: () => {
          this.waiters.remove(entry);
          reject(MakinaError.from(signal?.reason));
        },
      };
      const entry: QueueEntry<Waiter<T>> = this.waiters.push(waiter, ask.tier ?? "default", ask.owner ?? "");
      signal?.addEventListener("abort", waiter.onAbort, { once: true });
    });
  }

  release(slot: T): void {
    const next = this.waiters.shift()?.item;
    if (!next) {
      this.free.push(slot);
      return;
    }
    next.signal?.removeEventListener("abort", next.onAbort);
    next.resolve(slot);
  }
}
