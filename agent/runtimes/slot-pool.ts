import { FairQueue, flexPlaces, isServiceTier, MakinaError, TIER_AGING_MS, type QueueEntry, type ServiceTier } from "../../proto/index.js";

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
  /** Slots held by `flex` requests: at most {@link flexPlaces} of them, the rest kept for the other tiers. */
  private readonly flexHeld = new Set<T>();
  private readonly flexCap: number;
  private readonly mayTake = (e: QueueEntry<Waiter<T>>) => e.tier !== "flex" || this.flexHeld.size < this.flexCap;

  constructor(slots: T[]) {
    this.free = [...slots];
    this.flexCap = flexPlaces(slots.length);
  }

  /** Requests waiting for a slot. */
  get waiting(): number {
    return this.waiters.size;
  }

  /**
   * Waits for a free slot; rejects with `canceled` when `signal` aborts first. Of several free slots: the one
   * `score` ranks highest, the one freed longest ago among equals; without `score`, the one freed last. A request
   * that waits gets the next slot freed.
   */
  acquire(signal?: AbortSignal, ask: SlotAsk = {}, score?: (slot: T) => number): Promise<T> {
    if (signal?.aborted) return Promise.reject(MakinaError.from(signal.reason));
    const flex = ask.tier === "flex";
    if (this.free.length > 0 && (!flex || this.flexHeld.size < this.flexCap)) {
      const slot = this.free.splice(this.best(score), 1)[0]!;
      if (flex) this.flexHeld.add(slot);
      return Promise.resolve(slot);
    }
    return new Promise<T>((resolve, reject) => {
      const waiter: Waiter<T> = {
        resolve,
        signal,
        onAbort: () => {
          this.waiters.remove(entry);
          reject(MakinaError.from(signal?.reason));
        },
      };
      // A tier this agent does not know (an in-process link passes what the relay sent) waits as `default`.
      const entry: QueueEntry<Waiter<T>> = this.waiters.push(waiter, isServiceTier(ask.tier) ? ask.tier : "default", ask.owner ?? "");
      signal?.addEventListener("abort", waiter.onAbort, { once: true });
    });
  }

  /** The index of the free slot to hand out: the last freed, or the highest scored (the first freed among equals). */
  private best(score: ((slot: T) => number) | undefined): number {
    if (!score || this.free.length === 1) return this.free.length - 1;
    let at = 0;
    let top = score(this.free[0]!);
    for (let i = 1; i < this.free.length; i++) {
      const s = score(this.free[i]!);
      if (s > top) [at, top] = [i, s];
    }
    return at;
  }

  release(slot: T): void {
    this.flexHeld.delete(slot);
    const next = this.waiters.shift(performance.now(), this.mayTake);
    if (!next) {
      this.free.push(slot);
      return;
    }
    if (next.tier === "flex") this.flexHeld.add(slot);
    next.item.signal?.removeEventListener("abort", next.item.onAbort);
    next.item.resolve(slot);
  }
}
