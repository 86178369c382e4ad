import { MakinaError } from "../../proto/index.js";
import type { ChatInput, ChatOptions, ModelRuntime, RuntimeEvent } from "../runtimes/model-runtime.js";
import { waitFor } from "./wait-for.js";
import { WakeList } from "../flow/index.js";

/**
 * A stack's runtime while it restarts (a redeploy that changed what it is built on, without room to keep the old
 * one serving): requests wait for the new runtime as they would for an on-demand load, up to the load timeout,
 * and are then served by it; a restart that fails answers each of them 503 `runtime_unavailable` with the reason.
 * A stack that exists is never "not found" while it restarts.
 */
export class PendingRuntime implements ModelRuntime {
  private runtime: ModelRuntime | undefined;
  private failure: MakinaError | undefined;
  private settle!: () => void;
  private readonly settled = new Promise<void>((resolve) => (this.settle = resolve));

  constructor(
    private readonly loadTimeoutMs: number,
    readonly embeddingModel?: boolean,
  ) {}

  get contextSize(): number {
    return this.runtime?.contextSize ?? 0;
  }

  get endpoint(): string {
    return this.runtime?.endpoint ?? "";
  }

  /** The new runtime is ready: every waiting request goes to it. */
  ready(runtime: ModelRuntime): void {
    this.runtime ??= runtime;
    this.settle();
  }

  /** The restart failed (or the stack went): every waiting request is answered with this. */
  fail(error: MakinaError): void {
    if (!this.runtime) this.failure ??= error;
    this.settle();
  }

  async *chat(input: ChatInput, options: ChatOptions = {}): AsyncGenerator<RuntimeEvent> {
    if (!this.runtime && !this.failure) {
      const timeout = AbortSignal.timeout(this.loadTimeoutMs);
      try {
        await waitFor(this.settled, options.signal ? AbortSignal.any([options.signal, timeout]) : timeout);
      } catch (err) {
        if (options.signal?.aborted) throw MakinaError.from(options.signal.reason);
        throw new MakinaError("runtime_unavailable", `This stack's runtime is restarting and was not ready within ${Math.round(this.loadTimeoutMs / 1000)} s (MAKINA_LOAD_TIMEOUT_MS).`, { retryAfterMs: 5000, cause: err });
      }
    }
    if (this.failure) throw this.failure;
    yield* this.runtime!.chat(input, options);
  }

  async close(): Promise<void> {
    this.fail(new MakinaError("runtime_unavailable", "This stack is no longer served on this machine.", { retryAfterMs: 5000 }));
  }
}

/**
 * A runtime whose requests in flight are counted, so that one replaced by a redeploy is closed only once the
 * requests it took have ended (a handover: the new runtime takes every request from the moment it is ready).
 */
export class CountedRuntime implements ModelRuntime {
  private active = 0;
  private readonly drainers = new WakeList();

  constructor(readonly inner: ModelRuntime) {}

  get contextSize(): number {
    return this.inner.contextSize;
  }

  get endpoint(): string {
    return this.inner.endpoint;
  }

  get pid(): number | undefined {
    return this.inner.pid;
  }

  get embeddingModel(): boolean | undefined {
    return this.inner.embeddingModel;
  }

  get memoryBytes(): number | undefined {
    return this.inner.memoryBytes;
  }

  async *chat(input: ChatInput, options?: ChatOptions): AsyncGenerator<RuntimeEvent> {
    this.active++;
    try {
      yield* this.inner.chat(input, options);
    } finally {
      if (--this.active === 0) this.drainers.wake();
    }
  }

  /** Resolves once no request is in flight, or when `signal` aborts (those left are cut by the close). */
  drained(signal: AbortSignal): Promise<void> {
    return this.active === 0 ? Promise.resolve() : this.drainers.next(signal);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
