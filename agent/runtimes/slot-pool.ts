import { MakinaError } from "../../proto/index.js";

/** A fixed set of slots (for example a model's context sequences) handed out one request at a time, first come first served. */
export class SlotPool<T> {
  private readonly free: T[];
  private readonly waiters: { resolve: (slot: T) => void; reject: (err: unknown) => void; signal?: AbortSignal; onAbort: () => void }[] = [];

  constructor(slots: T[]) {
    this.free = [...slots];
  }

  /** Requests waiting for a slot. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** Waits for a free slot; rejects with `canceled` when `signal` aborts first. */
  acquire(signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(MakinaError.from(signal.reason));
    const slot = this.free.pop();
    if (slot !== undefined) return Promise.resolve(slot);
    return new Promise<T>((resolve, reject) => {
      const waiter = {
        resolve,
        reject,
        signal,
        onAbort: () => {
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          reject(MakinaError.from(signal?.reason));
        },
      };
      signal?.addEventListener("abort", waiter.onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  release(slot: T): void {
    const next = this.waiters.shift();
    if (!next) {
      this.free.push(slot);
      return;
    }
    next.signal?.removeEventListener("abort", next.onAbort);
    next.resolve(slot);
  }
}
