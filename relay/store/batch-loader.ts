import { TurnBatcher } from "./turn-batcher.js";

/**
 * Reads many keys in one query when many are asked for at once. A key asked for while no batch is running
 * is read on the next turn of the event loop (with every key asked for in that turn); keys asked for while a
 * batch is running wait for it and go together in the next one. So an idle relay reads at once, and a relay
 * with thousands of machines linking in the same seconds reads their rows in a few statements rather than one
 * round trip each (in a sandbox where every socket write is a system call, that was a quarter of its CPU).
 *
 * A failed batch fails every key in it; the next batch is tried afresh.
 */
export class BatchLoader<K, V> extends TurnBatcher {
  private queued = new Map<K, { resolve: (v: V) => void; reject: (err: unknown) => void }[]>();

  constructor(
    /** Reads the given keys (at most `maxBatch`, without repeats); a key missing from the answer gets `missing`. */
    private readonly fetch: (keys: K[]) => Promise<Map<K, V>>,
    private readonly missing: V,
    private readonly maxBatch = 500,
  ) {
    super();
  }

  load(key: K): Promise<V> {
    return new Promise<V>((resolve, reject) => {
      const waiting = this.queued.get(key);
      if (waiting) waiting.push({ resolve, reject });
      else this.queued.set(key, [{ resolve, reject }]);
      this.schedule();
    });
  }

  protected get pending(): boolean {
    return this.queued.size > 0;
  }

  protected async runBatch(): Promise<void> {
    const batch = new Map<K, { resolve: (v: V) => void; reject: (err: unknown) => void }[]>();
    for (const [key, waiters] of this.queued) {
      if (batch.size >= this.maxBatch) break;
      batch.set(key, waiters);
      this.queued.delete(key);
    }
    try {
      const found = await this.fetch([...batch.keys()]);
      for (const [key, waiters] of batch) for (const w of waiters) w.resolve(found.has(key) ? found.get(key)! : this.missing);
    } catch (err) {
      for (const waiters of batch.values()) for (const w of waiters) w.reject(err);
    }
  }
}
