import { MakinaError, type Logger, type RuntimeState, type StateDetail, type UnloadReason } from "../../proto/index.js";
import type { ChatInput, ChatOptions, ModelRuntime, RuntimeEvent } from "../runtimes/model-runtime.js";
import type { ResidencyBook, Resident } from "./residency-book.js";
import { waitFor } from "./wait-for.js";
import { WakeList } from "../flow/index.js";

/** Options of {@link DemandRuntime}. */
export interface DemandRuntimeOptions {
  stackId: string;
  /** The stack's model id: what messages name it by. */
  modelId: string;
  /** The memory its model needs loaded (given the runtime once loaded: its actual context), as the budget counts it. */
  memoryBytes: (loaded: ModelRuntime | undefined) => number;
  /** Loads the model (the runtime adapter's start); `signal` aborts on the load timeout or when the stack goes. */
  start: (signal: AbortSignal) => Promise<ModelRuntime>;
  book: ResidencyBook;
  /** Without a request for this long, the model unloads; 0: only when the machine needs the room. */
  idleUnloadMs: number;
  /** The longest a load may take, room made for it included. */
  loadTimeoutMs: number;
  /** The runtime's state changed: `loading`, `ready`, `unloading`, `unloaded` (with why, when a load failed), with why it unloads, or how long a load took and the context it loaded with. */
  onState: (state: RuntimeState, error: string | null, detail?: StateDetail) => void;
  /** A runtime already loaded for this stack (its residency changed from always): adopted as it is, not reloaded. */
  adopt?: ModelRuntime;
  /** An embedding model, as its file's header says (known before it loads). */
  embeddingModel?: boolean;
  log: Logger;
  now?: () => number;
}

/**
 * An on-demand stack's runtime: a {@link ModelRuntime} whose model is loaded by the first request and unloaded
 * after `idleUnloadMs` without one, or when the machine needs the room for another ({@link ResidencyBook}).
 * Requests arriving while it loads share that one load and wait for it; a load that fails answers each of them
 * 503 `runtime_unavailable` with the reason, and the next request tries again. A request that leaves while it
 * waits does not cancel the load (others may be waiting, or come), and used nothing. A runtime with a request in
 * flight is never unloaded.
 */
export class DemandRuntime implements ModelRuntime {
  private loaded: ModelRuntime | undefined;
  /** A runtime that can sleep (vLLM), asleep: its process kept, its accelerator memory freed; the next load wakes it. */
  private asleep: ModelRuntime | undefined;
  private loading: Promise<ModelRuntime> | undefined;
  private unloading: Promise<void> | undefined;
  /** Requests in flight or waiting for the load. */
  private inFlight = 0;
  /** Handed over to the caller of {@link detach} (the stack became always). */
  private detached = false;
  private readonly drainers = new WakeList();
  private lastUsed: number;
  private idleTimer: NodeJS.Timeout | undefined;
  private idleUnloadMs: number;
  private readonly gone = new AbortController();
  private readonly now: () => number;
  readonly embeddingModel: boolean | undefined;
  private readonly resident: Resident;

  constructor(private readonly o: DemandRuntimeOptions) {
    this.now = o.now ?? Date.now;
    this.lastUsed = this.now();
    this.idleUnloadMs = o.idleUnloadMs;
    this.embeddingModel = o.adopt?.embeddingModel ?? o.embeddingModel;
    this.resident = {
      stackId: o.stackId,
      name: o.modelId,
      bytes: () => o.memoryBytes(this.loaded),
      evictable: () => this.loaded !== undefined && this.loading === undefined && this.unloading === undefined && this.inFlight === 0,
      lastUsedAt: () => this.lastUsed,
      evict: () => this.unload("memory"),
    };
    if (o.adopt) {
      this.loaded = o.adopt;
      // Counted already (it was loaded as an always stack's); the book takes it as this resident now.
      void o.book.admit(this.resident, this.gone.signal, false).catch(() => undefined);
      this.armIdle();
    }
  }

  get contextSize(): number {
    return this.loaded?.contextSize ?? 0;
  }

  get memoryBytes(): number | undefined {
    return this.loaded?.memoryBytes;
  }

  get endpoint(): string {
    return this.loaded?.endpoint ?? "";
  }

  get pid(): number | undefined {
    return (this.loaded ?? this.asleep)?.pid;
  }

  /** The stack's model id. */
  get modelId(): string {
    return this.o.modelId;
  }

  /** Whether the model is in memory now. */
  get isLoaded(): boolean {
    return this.loaded !== undefined && this.unloading === undefined;
  }

  /** A new idle time (the stack was edited): from the next request's end on. */
  setIdleUnload(ms: number): void {
    this.idleUnloadMs = ms;
    this.armIdle();
  }

  async *chat(input: ChatInput, options: ChatOptions = {}): AsyncGenerator<RuntimeEvent> {
    this.inFlight++;
    clearTimeout(this.idleTimer);
    try {
      const runtime = await this.acquire(options.signal);
      yield* runtime.chat(input, options);
    } finally {
      this.inFlight--;
      this.lastUsed = this.now();
      if (this.inFlight === 0) {
        this.o.book.notify();
        this.drainers.wake();
        this.armIdle();
      }
    }
  }

  /** Loads the model now, without a request (an admin warming it); its idle time runs from now. */
  async loadNow(signal?: AbortSignal): Promise<void> {
    await this.acquire(signal);
    this.lastUsed = this.now();
    this.armIdle();
  }

  /**
   * Unloads the model now (an admin giving its memory back), once the requests it serves have ended (within the
   * load timeout; 503 if some still run then).
   */
  async unloadNow(): Promise<void> {
    await this.loading?.catch(() => undefined);
    await this.drained(AbortSignal.timeout(this.o.loadTimeoutMs));
    if (this.inFlight > 0) throw new MakinaError("runtime_unavailable", `This stack's model is serving ${this.inFlight} requests: it unloads once they end, or when idle.`, { retryAfterMs: 5000 });
    clearTimeout(this.idleTimer);
    await this.unload("asked");
  }

  /** Resolves once no request is in flight or waiting, or when `signal` aborts. */
  drained(signal: AbortSignal): Promise<void> {
    return this.inFlight === 0 ? Promise.resolve() : this.drainers.next(signal);
  }

  /**
   * Loads the model now, if it is not loaded, waiting as a request would (the stack's residency changed to
   * always); the runtime it loaded is handed over and this one is done.
   */
  async detach(signal?: AbortSignal): Promise<ModelRuntime> {
    const runtime = await this.acquire(signal);
    this.loaded = undefined;
    this.detached = true;
    this.gone.abort();
    clearTimeout(this.idleTimer);
    // Its place in the book is the caller's to take over (never left free for another load meanwhile).
    return runtime;
  }

  /** Whether the runtime's own state changes (a restart, a crash loop) are the stack's: while loaded, or once handed over. */
  get reportsState(): boolean {
    return this.isLoaded || this.detached;
  }

  /** Unloads the model for good (the stack is removed or redeployed). */
  async close(): Promise<void> {
    this.gone.abort(new MakinaError("runtime_unavailable", "The stack was removed from this machine."));
    clearTimeout(this.idleTimer);
    await this.loading?.catch(() => undefined);
    await this.unload(null);
    await this.asleep?.close();
    this.asleep = undefined;
    this.o.book.leave(this.o.stackId);
  }

  /** The loaded runtime, loading it (or joining the load under way) first. */
  private async acquire(signal?: AbortSignal): Promise<ModelRuntime> {
    for (;;) {
      if (this.gone.signal.aborted) throw new MakinaError("runtime_unavailable", "This stack is no longer served on this machine.", { retryAfterMs: 5000 });
      if (this.unloading) {
        await this.unloading;
        continue;
      }
      if (this.loaded) return this.loaded;
      this.loading ??= this.load();
      await waitFor(this.loading, signal);
    }
  }

  private async load(): Promise<ModelRuntime> {
    const signal = AbortSignal.any([this.gone.signal, AbortSignal.timeout(this.o.loadTimeoutMs)]);
    const started = this.now();
    this.o.onState("loading", null);
    try {
      await this.o.book.admit(this.resident, signal);
      signal.throwIfAborted();
      const runtime = (await this.woken()) ?? (await this.o.start(signal));
      if (this.gone.signal.aborted) {
        await runtime.close();
        throw this.gone.signal.reason;
      }
      this.loaded = runtime;
      const loadMs = Math.max(1, Math.round(this.now() - started));
      // The context it serves is known only now (the relay shows it on the stack from here on).
      this.o.onState("ready", null, { loadMs, ...(runtime.contextSize > 0 && { contextSize: runtime.contextSize }) });
      this.o.log.info("model loaded on demand", { stackId: this.o.stackId, loadMs });
      return runtime;
    } catch (err) {
      this.o.book.leave(this.o.stackId);
      const e = MakinaError.from(err);
      const timedOut = signal.aborted && !this.gone.signal.aborted;
      const error =
        e.code === "insufficient_memory" ? e : new MakinaError("runtime_unavailable", `The model could not be loaded: ${timedOut ? `it took longer than ${Math.round(this.o.loadTimeoutMs / 1000)} s (MAKINA_LOAD_TIMEOUT_MS)` : e.message}`, { retryAfterMs: 5000 });
      if (!this.gone.signal.aborted) this.o.onState("unloaded", error.message, { loadMs: Math.max(1, Math.round(this.now() - started)) });
      this.o.log.warn("a model loaded on demand failed to load", { stackId: this.o.stackId, error: error.message });
      throw error;
    } finally {
      this.loading = undefined;
    }
  }

  /** Unloads the model: for `why` (its idle time passed, or another needs the room), or for good (null: the stack goes). */
  private unload(why: UnloadReason | null): Promise<void> {
    const runtime = this.loaded;
    if (!runtime) return this.unloading ?? Promise.resolve();
    this.unloading ??= (async () => {
      const live = !this.gone.signal.aborted;
      if (live) this.o.onState("unloading", null, why ? { reason: why } : undefined);
      try {
        // A runtime that can sleeps (its process kept, its accelerator memory freed); one that cannot, or fails to, stops.
        if (why && runtime.sleep) {
          try {
            await runtime.sleep();
            this.asleep = runtime;
          } catch (err) {
            this.o.log.warn("a runtime failed to sleep: stopped instead", { stackId: this.o.stackId, err });
            await runtime.close();
          }
        } else await runtime.close();
      } finally {
        this.loaded = undefined;
        this.unloading = undefined;
        this.o.book.leave(this.o.stackId);
        if (live) this.o.onState("unloaded", null);
        if (why) this.o.log.info("model unloaded", { stackId: this.o.stackId, why: why === "idle" ? `idle for ${Math.round(this.idleUnloadMs / 1000)} s` : why === "memory" ? "to make room for another" : "as asked" });
      }
    })();
    return this.unloading;
  }

  /** The runtime asleep, woken; undefined when none sleeps, or it failed to wake (it is stopped: a fresh start follows). */
  private async woken(): Promise<ModelRuntime | undefined> {
    const runtime = this.asleep;
    if (!runtime?.wake) return undefined;
    this.asleep = undefined;
    try {
      await runtime.wake();
      return runtime;
    } catch (err) {
      this.o.log.warn("a sleeping runtime failed to wake: started again", { stackId: this.o.stackId, err });
      await runtime.close();
      return undefined;
    }
  }

  /** With nothing in flight, unloads after the idle time (none: only when the room is needed). */
  private armIdle(): void {
    clearTimeout(this.idleTimer);
    if (this.idleUnloadMs <= 0 || this.inFlight > 0 || !this.loaded || this.gone.signal.aborted) return;
    this.idleTimer = setTimeout(() => {
      if (this.resident.evictable()) void this.unload("idle");
    }, this.idleUnloadMs);
    this.idleTimer.unref();
  }
}
