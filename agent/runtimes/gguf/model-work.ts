import { setMaxListeners } from "node:events";
import { MakinaError } from "../../../proto/index.js";

/**
 * The work a loaded model is doing (generations, embeddings), so that its unload waits for it: once {@link stop}
 * is called, no work starts (`use` rejects with the unload's error) and the work running is told to stop
 * (`signal` aborts); `stop` resolves once every piece of work started before it has ended.
 */
export class ModelWork {
  private readonly unloading = new AbortController();
  private readonly running = new Set<Promise<void>>();

  constructor() {
    // Every request running listens to it (see `join`): as many as the model serves at once, not a leak.
    setMaxListeners(0, this.unloading.signal);
  }

  /** Aborted once the unload begins, with its `runtime_unavailable` error as the reason. */
  get signal(): AbortSignal {
    return this.unloading.signal;
  }

  /** Throws the unload's error once it has begun. */
  check(): void {
    if (this.unloading.signal.aborted) throw MakinaError.from(this.unloading.signal.reason);
  }

  /**
   * A request's signal: aborted when `signal` (its caller's) aborts or the unload begins. `release` stops listening
   * to both (the unload's signal lives as long as the model: without it, every request would stay listed on it).
   */
  join(signal: AbortSignal | undefined): { signal: AbortSignal; release(): void } {
    const joined = new AbortController();
    const sources = signal ? [signal, this.unloading.signal] : [this.unloading.signal];
    const onAbort = (event: Event) => joined.abort((event.target as AbortSignal).reason);
    for (const s of sources) {
      if (s.aborted) joined.abort(s.reason);
      else s.addEventListener("abort", onAbort, { once: true });
    }
    return { signal: joined.signal, release: () => sources.forEach((s) => s.removeEventListener("abort", onAbort)) };
  }

  /** Starts a piece of work on the model, unless its unload has begun; the unload waits for it. */
  use<T>(start: () => Promise<T>): Promise<T> {
    if (this.unloading.signal.aborted) return Promise.reject(MakinaError.from(this.unloading.signal.reason));
    const work = start();
    const settled = work.then(
      () => undefined,
      () => undefined,
    );
    this.running.add(settled);
    void settled.then(() => this.running.delete(settled));
    return work;
  }

  /** Begins the unload: no work starts from now on, what runs is told to stop; resolves once it has all ended. */
  async stop(): Promise<void> {
    this.unloading.abort(new MakinaError("runtime_unavailable", "The model is being unloaded.", { retryAfterMs: 1000 }));
    await Promise.all(this.running);
  }
}
