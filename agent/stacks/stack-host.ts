import { EMPTY_STEP_RESULT, MakinaError, redactOutputLine, type LogBook, type StateDetail, type DeployStep, type HardwareReport, type Logger, type RuntimeState, type StepProgress, type StepResult } from "../../proto/index.js";
import type { ModelStore } from "../models/model-store.js";
import type { ModelRuntime } from "../runtimes/model-runtime.js";
import { layersFor } from "../layers/layers-for.js";
import { checkModelFile } from "../models/check-model-file.js";
import { unmetRequirements, type ModelToServe, type RuntimeAdapter, type RuntimeContext, type RuntimeKind, type RuntimeSetup } from "../runtimes/runtime-adapter.js";
import { DemandRuntime } from "./demand-runtime.js";
import { CountedRuntime, PendingRuntime } from "./runtime-swap.js";
import { estimateMemory, type MemoryOf } from "./memory-estimate.js";
import type { HostedStack } from "./hosted-stack.js";
import type { ResidencyBook, Resident } from "./residency-book.js";

export type { RuntimeState };
export type { HostedStack };

/** What the host needs from its surroundings, passed in by `startAgent`. */
export interface StackHostDeps {
  /** How runtimes are installed and run on this machine (from the agent's config): what every step's context starts from. */
  runtimeSetup: RuntimeSetup;
  models: ModelStore;
  adapters: Readonly<Record<RuntimeKind, RuntimeAdapter>>;
  hardware: () => HardwareReport;
  /** A runtime changed state on its own (a restart, a crash loop, an on-demand load or unload): the relay must hear of it. */
  onRuntimeState: (stackId: string, state: RuntimeState, error: string | null, detail?: StateDetail) => void;
  /** The runtimes loaded on this machine, kept within its limit. */
  book: ResidencyBook;
  /** The longest an on-demand load may take (room made for it included), ms. */
  loadTimeoutMs: number;
  /** The context (tokens per sequence) and sequences a GGUF model gets when its stack asks for none: what its memory is counted at. */
  ggufContext: { contextSize: number; sequences: number };
  log: Logger;
  /** The machine's log as an admin reads it: each stack's runtime output goes in under the stack. */
  logs: LogBook;
}

/** An `always` stack's runtime as the residency book counts it: never unloaded for room. */
const pinned = (stackId: string, name: string, bytes: () => number): Resident => ({ stackId, name, bytes, evictable: () => false, lastUsedAt: () => 0, evict: async () => undefined });

/** A model reference that a runtime resolves itself (a hub repository id for vLLM or MLX), or a running server's address. */
function pulledByRuntime(runtime: string, ref: string): boolean {
  return runtime === "openai" || (runtime !== "gguf" && /^hf:[\w.-]+\/[\w.-]+$/.test(ref));
}

/**
 * The stacks this machine serves: runs the deploy commands the relay sends
 * (install runtime → pull model → configure endpoint) through the runtime
 * adapters, and keeps each configured stack's runtime.
 */
export class StackHost {
  private readonly runtimes = new Map<string, ModelRuntime>();
  /** The same runtimes with their layers (a harness) in front: what requests go to. */
  private readonly served = new Map<string, ModelRuntime>();
  private readonly hosted = new Map<string, HostedStack>();
  /** Each stack's latest runtime start (see `context`). */
  private readonly generations = new Map<string, number>();
  /** Requests waiting for a stack's runtime being restarted: failed if the stack goes meanwhile. */
  private readonly pending = new Map<string, PendingRuntime>();
  /** Each stack's memory as the budget counts it. */
  private readonly memoryOf = new Map<string, MemoryOf>();
  /** Stacks whose model is a reranker (by its file's header): they answer rerank requests only. */
  private readonly rankers = new Set<string>();

  constructor(private readonly deps: StackHostDeps) {}

  /** What this machine serves, for `runtime list` and `model list`. */
  list(): HostedStack[] {
    return [...this.hosted.values()].map((h) => {
      const runtime = this.runtimes.get(h.stackId);
      return { ...h, pid: runtime?.pid ?? null, memoryBytes: this.counted(h.stackId, runtime) };
    });
  }

  /** The machine's limits on loaded runtimes, and what they count now. */
  memoryCounts(): { budgetBytes: number; usedBytes: number; maxLoaded: number; loaded: number; loadedStacks: string[] } {
    return { budgetBytes: this.deps.book.limits.budgetBytes, usedBytes: this.deps.book.usedBytes(), maxLoaded: this.deps.book.limits.maxLoaded, loaded: this.deps.book.loaded().length, loadedStacks: this.deps.book.loaded() };
  }

  /** The runtime serving a stack, with its layers in front, if it is configured and not failed. */
  runtime(stackId: string): ModelRuntime | undefined {
    return this.hosted.get(stackId)?.state === "failed" ? undefined : (this.served.get(stackId) ?? this.runtimes.get(stackId));
  }

  private record(stackId: string, patch: Partial<HostedStack> & Pick<HostedStack, "state">): void {
    const previous = this.hosted.get(stackId);
    this.hosted.set(stackId, {
      ...{ stackId, modelId: "", runtime: "gguf", endpoint: "", modelRef: "", modelPath: null, modelSha256: null, modelSizeBytes: null },
      ...{ contextSize: null, maxContext: null, residency: "always", error: null, pid: null, memoryBytes: 0 },
      ...previous,
      ...patch,
      since: previous?.state === patch.state ? previous.since : Date.now(),
    });
  }

  private adapter(kind: string): RuntimeAdapter {
    const adapter = (this.deps.adapters as Record<string, RuntimeAdapter | undefined>)[kind];
    if (!adapter) throw new MakinaError("invalid_value", `Unknown runtime '${kind}'.`);
    const unmet = unmetRequirements(adapter.requirements, this.deps.hardware());
    if (unmet.length) throw new MakinaError("runtime_unavailable", `The ${kind} runtime cannot run here: ${unmet.join("; ")}.`);
    return adapter;
  }

  /** Where a stack's runtime logs: the agent's log with the stack named, and its process's output kept (redacted) as the stack's. */
  private toStackLog(stackId: string): Pick<RuntimeContext, "log" | "output"> {
    return { log: this.deps.log.child({ stackId }), output: (line) => this.deps.logs.add(stackId, "output", redactOutputLine(line)) };
  }

  /** `quiet.on`: the stack serves (or its requests wait) while this runtime starts: its start is not news. */
  private context(onProgress: (p: StepProgress) => void, signal?: AbortSignal, stackId?: string, quiet?: { on: boolean }): RuntimeContext {
    // Only the stack's latest runtime speaks for it: one it replaces (draining, closing) says nothing more.
    const generation = stackId ? (this.generations.get(stackId) ?? 0) + 1 : 0;
    if (stackId) this.generations.set(stackId, generation);
    return {
      ...this.deps.runtimeSetup,
      ...(stackId ? this.toStackLog(stackId) : { log: this.deps.log }),
      signal,
      onProgress,
      onState: stackId
        ? (state, error) => {
            if (!this.hosted.has(stackId) || this.generations.get(stackId) !== generation) return;
            // While a configure starts the runtime, it says "ready" itself once it has the endpoint.
            if (state === "ready" && !this.runtimes.has(stackId)) return;
            if (state === "loading" && quiet?.on) return;
            this.record(stackId, { state, error });
            this.deps.onRuntimeState(stackId, state, error);
          }
        : undefined,
    };
  }

  /** Runs one deploy step; progress goes to `onProgress`. */
  async run(stackId: string, step: DeployStep, onProgress: (p: StepProgress) => void, signal?: AbortSignal): Promise<StepResult> {
    const empty: StepResult = EMPTY_STEP_RESULT;
    const log = this.deps.log.child({ stackId, step: step.kind });
    switch (step.kind) {
      case "installRuntime": {
        const { version } = await this.adapter(step.runtime).install(this.context(onProgress, signal));
        log.info("runtime installed", { runtime: step.runtime, version });
        return empty;
      }
      case "pullModel": {
        if (pulledByRuntime(step.runtime, step.ref)) return empty;
        const model = await this.deps.models.pull(step.ref, {
          expectedSha256: step.sha256 || undefined,
          signal,
          onProgress: (p) => onProgress({ stage: "downloading", ...p }),
        });
        log.info("model ready on disk", { path: model.path, sha256: model.sha256 });
        return { ...empty, modelPath: model.path, modelSha256: model.sha256, modelSizeBytes: model.sizeBytes };
      }
      case "configureEndpoint":
        return this.configure(stackId, step, onProgress, log, signal);
      case "checkModel":
        return checkModelFile(step.ref, step.runtime, log, signal);
      case "readLog":
        return { ...empty, ...this.deps.logs.read(stackId, step.after, step.limit) };
      case "loadModel": {
        const runtime = this.hosted.get(stackId)?.state === "failed" ? undefined : this.runtimes.get(stackId);
        if (!(runtime instanceof DemandRuntime)) throw new MakinaError("runtime_unavailable", runtime ? "This stack's model is loaded while it is deployed: only an on-demand stack's is loaded or unloaded by hand." : "This stack is not served on this machine now.");
        if (step.load) await runtime.loadNow(signal);
        else await runtime.unloadNow();
        log.info(step.load ? "model loaded, as asked" : "model unloaded, as asked");
        return empty;
      }
      case "removeStack": {
        const runtime = this.runtimes.get(stackId);
        for (const held of [this.runtimes, this.served, this.hosted]) held.delete(stackId);
        this.pending.get(stackId)?.fail(new MakinaError("runtime_unavailable", "This stack is no longer served on this machine.", { retryAfterMs: 5000 }));
        this.pending.delete(stackId);
        this.memoryOf.delete(stackId);
        this.rankers.delete(stackId);
        await runtime?.close();
        this.deps.book.leave(stackId);
        this.deps.logs.forget(stackId);
        return empty;
      }
    }
  }

  /**
   * Makes a stack's endpoint: its runtime loaded now (`always`), or ready to load on its first request
   * (`on_demand`). A stack sent again unchanged (a reconnect, an edit of its layers or residency) keeps the
   * runtime it has, loaded or not: a new residency or idle time applies without a restart.
   */
  private async configure(stackId: string, step: Extract<DeployStep, { kind: "configureEndpoint" }>, onProgress: (p: StepProgress) => void, log: Logger, signal?: AbortSignal): Promise<StepResult> {
    const { runtime: kind, modelRef, modelId } = step;
    const maxContext = step.maxContext || null;
    // An existing server is not started or stopped by Makina: always on, whatever was asked.
    const onDemand = step.residency === "on_demand" && kind !== "openai";
    const idleUnloadMs = step.idleUnloadS * 1000;
    const adapter = this.adapter(kind);
    const withLayers = layersFor(step);
    const model = pulledByRuntime(kind, modelRef) ? null : await this.deps.models.pull(modelRef, { signal });
    const current = this.runtimes.get(stackId);
    const existing = this.hosted.get(stackId);
    const spec = { modelId, ref: modelRef, path: model?.path ?? null, maxContext };
    if (current && existing?.state !== "failed" && existing?.modelRef === modelRef && existing.runtime === kind && existing.modelId === modelId && existing.modelPath === (model?.path ?? null) && existing.maxContext === maxContext) {
      // A reconnect (or an edit of the stack's layers or residency) re-sends the deploy sequence: the runtime
      // keeps serving, its layers and residency as sent now. (A new model id restarts it: vLLM and MLX serve under
      // that name; so does another file for the same reference, a new SHA-256 pinned, and another context asked.)
      const kept = await this.keep(stackId, current, onDemand, idleUnloadMs, (adopt) => this.demand(stackId, spec, adapter, step.idleUnloadS, adopt.embeddingModel, adopt), signal);
      this.served.set(stackId, withLayers(kept));
      return this.endpointResult(stackId, kept.contextSize, kept);
    }
    const facts = { modelId, runtime: kind, modelRef, modelPath: spec.path, modelSha256: model?.sha256 ?? null, modelSizeBytes: model?.sizeBytes ?? null, maxContext };
    const { memoryOf, embeddingModel, rankingModel } = await estimateMemory(adapter.kind, spec, model?.sizeBytes ?? null, { hardware: this.deps.hardware(), ...this.deps.ggufContext }, log, signal);
    this.memoryOf.set(stackId, memoryOf);
    if (rankingModel) this.rankers.add(stackId);
    else this.rankers.delete(stackId);
    const serving = current && existing?.state !== "failed" ? current : undefined;
    if (serving instanceof CountedRuntime && !onDemand && existing?.modelId === modelId && existing.runtime === kind) {
      const handed = await this.handOver(stackId, modelId, serving, (quiet) => adapter.start({ ...spec, replaces: serving.inner }, this.context(onProgress, signal, stackId, quiet)), withLayers, signal);
      if (handed) {
        this.record(stackId, { ...facts, state: "ready", residency: "always", endpoint: handed.endpoint, contextSize: handed.contextSize || null, error: null });
        log.info("endpoint configured, handed over from the runtime it replaces", { modelId, runtime: kind, contextSize: handed.contextSize });
        return this.endpointResult(stackId, handed.contextSize, handed);
      }
    }
    // A stack serving now is restarted: its requests wait for the new runtime meanwhile, as for a load.
    const pending = serving ? new PendingRuntime(this.deps.loadTimeoutMs, serving.embeddingModel) : undefined;
    this.runtimes.delete(stackId);
    if (pending) this.pending.set(stackId, pending);
    if (pending) this.served.set(stackId, withLayers(pending));
    else this.served.delete(stackId);
    this.record(stackId, { ...facts, state: onDemand ? "unloaded" : "loading", residency: onDemand ? "on_demand" : "always", error: null });
    try {
      // The requests the old runtime took end first (within the load timeout); those after wait for the new one.
      if (serving instanceof CountedRuntime || serving instanceof DemandRuntime) await serving.drained(AbortSignal.any([AbortSignal.timeout(this.deps.loadTimeoutMs), ...(signal ? [signal] : [])]));
      await current?.close();
      this.deps.book.leave(stackId);
      // Removed (or the deploy given up) while the old runtime's requests ended: nothing is started for it.
      if (!this.hosted.has(stackId)) throw new MakinaError("runtime_unavailable", "This stack was removed from this machine.");
      signal?.throwIfAborted();
      const runtime = onDemand ? this.demand(stackId, spec, adapter, step.idleUnloadS, embeddingModel) : await this.startAlways(stackId, spec, adapter, onProgress, model?.sizeBytes ?? 0, signal, pending !== undefined);
      this.served.set(stackId, withLayers(runtime));
      pending?.ready(runtime);
      this.pending.delete(stackId);
      if (onDemand) {
        log.info("endpoint configured, loaded on demand", { modelId, runtime: kind, idleUnloadS: step.idleUnloadS });
        return this.endpointResult(stackId, 0, runtime);
      }
      this.record(stackId, { state: "ready", endpoint: runtime.endpoint, contextSize: runtime.contextSize || null, error: null });
      log.info("endpoint configured", { modelId, runtime: kind, contextSize: runtime.contextSize });
      return this.endpointResult(stackId, runtime.contextSize, runtime);
    } catch (err) {
      const e = MakinaError.from(err);
      pending?.fail(new MakinaError("runtime_unavailable", `This stack's runtime could not be restarted: ${e.message}`, { retryAfterMs: 5000 }));
      this.pending.delete(stackId);
      throw err;
    }
  }

  /** A configured endpoint's result: the context its runtime serves, and what its model is for. */
  private endpointResult(stackId: string, contextSize: number, runtime: { embeddingModel?: boolean | undefined }): StepResult {
    return { ...EMPTY_STEP_RESULT, contextSize, embeddingModel: runtime.embeddingModel ?? false, rankingModel: this.rankers.has(stackId) };
  }

  /** An on-demand stack's runtime, unloaded: its first request loads it. */
  private demand(stackId: string, spec: ModelToServe, adapter: RuntimeAdapter, idleUnloadS: number, embeddingModel: boolean | undefined, adopt?: ModelRuntime): DemandRuntime {
    const memoryOf = this.memoryOf.get(stackId) ?? (() => 0);
    const demand: DemandRuntime = new DemandRuntime({
      stackId,
      modelId: spec.modelId,
      memoryBytes: (loaded) => loaded?.memoryBytes || memoryOf(loaded?.contextSize ?? 0),
      start: (loadSignal) => adapter.start({ ...spec, onDemand: true }, { ...this.context(() => undefined, loadSignal), ...this.toStackLog(stackId), onState: (state, error) => void (demand.reportsState && this.stateChanged(stackId, state, error)) }),
      book: this.deps.book,
      idleUnloadMs: idleUnloadS * 1000,
      loadTimeoutMs: this.deps.loadTimeoutMs,
      onState: (state, error, detail) => this.stateChanged(stackId, state, error, detail),
      embeddingModel,
      adopt,
      log: this.deps.log,
    });
    this.runtimes.set(stackId, demand);
    // Told before the step's result: the relay sends requests to an unloaded stack, and waits for its load.
    if (!adopt) this.deps.onRuntimeState(stackId, "unloaded", null);
    return demand;
  }

  /** An `always` stack's runtime, started now (room made by unloading idle on-demand runtimes; it does not wait for more). */
  private async startAlways(stackId: string, spec: ModelToServe, adapter: RuntimeAdapter, onProgress: (p: StepProgress) => void, sizeBytes: number, signal: AbortSignal | undefined, restart: boolean): Promise<ModelRuntime> {
    onProgress({ stage: "starting the runtime", doneBytes: 0, totalBytes: sizeBytes, bytesPerSecond: 0, etaSeconds: 0 });
    try {
      await this.deps.book.admit(this.pinned(stackId, spec.modelId), signal ?? new AbortController().signal, false);
      const quiet = { on: restart };
      const runtime = new CountedRuntime(await adapter.start(spec, this.context(onProgress, signal, stackId, quiet)));
      quiet.on = false;
      this.runtimes.set(stackId, runtime);
      return runtime;
    } catch (err) {
      this.deps.book.leave(stackId);
      // The machine's owner sees the runtime's own words in `runtime list`.
      this.record(stackId, { state: "failed", error: err instanceof Error ? err.message : String(err) });
      throw err;
    }
  }

  /**
   * Starts the runtime replacing `old` beside it, where the machine has room for both: `old` serves until the new
   * one is ready, which then takes every request; `old` is closed once the requests it took have ended (within the
   * load timeout). Undefined, having changed nothing, when there is no room for both.
   */
  private async handOver(stackId: string, modelId: string, old: CountedRuntime, start: (quiet: { on: boolean }) => Promise<ModelRuntime>, withLayers: (r: ModelRuntime) => ModelRuntime, signal?: AbortSignal): Promise<ModelRuntime | undefined> {
    const memoryOf = this.memoryOf.get(stackId) ?? (() => 0);
    const next = pinned(`${stackId}\u0000next`, `${modelId} (its new runtime)`, () => memoryOf(0));
    try {
      await this.deps.book.admit(next, signal ?? new AbortController().signal, false);
    } catch {
      return undefined;
    }
    let runtime: CountedRuntime;
    const quiet = { on: true };
    try {
      runtime = new CountedRuntime(await start(quiet));
      quiet.on = false;
    } catch (err) {
      this.deps.book.leave(next.stackId);
      // The stack fails as a restart's would: the old runtime does not go on serving what was replaced.
      this.runtimes.delete(stackId);
      this.served.delete(stackId);
      await old.close();
      this.deps.book.leave(stackId);
      this.record(stackId, { state: "failed", error: err instanceof Error ? err.message : String(err) });
      throw err;
    }
    this.runtimes.set(stackId, runtime);
    this.served.set(stackId, withLayers(runtime));
    void old
      .drained(AbortSignal.timeout(this.deps.loadTimeoutMs))
      .then(() => old.close())
      .catch((err: unknown) => this.deps.log.warn("a replaced runtime did not close cleanly", { stackId, err }))
      .finally(() => this.deps.book.leave(next.stackId));
    return runtime;
  }

  /** The runtime a stack sent again unchanged keeps, under the residency sent now (never restarted for it). */
  private async keep(stackId: string, current: ModelRuntime, onDemand: boolean, idleUnloadMs: number, adopting: (adopt: ModelRuntime) => DemandRuntime, signal?: AbortSignal): Promise<ModelRuntime> {
    if (current instanceof DemandRuntime) {
      if (onDemand) {
        current.setIdleUnload(idleUnloadMs);
        // Said again for this link (a reconnect): where it stands, a load under way as one from unloaded.
        const state = this.hosted.get(stackId)?.state ?? "unloaded";
        this.deps.onRuntimeState(stackId, state === "loading" || state === "unloaded" ? "unloaded" : state, null);
        if (state === "loading") this.deps.onRuntimeState(stackId, "loading", null);
        return current;
      }
      // Always from now on: loaded now if it was not, and counted as never unloaded.
      const runtime = new CountedRuntime(await current.detach(signal));
      this.deps.book.replace(this.pinned(stackId, current.modelId));
      this.runtimes.set(stackId, runtime);
      this.record(stackId, { state: "ready", residency: "always", endpoint: runtime.endpoint, contextSize: runtime.contextSize || null, error: null });
      this.deps.onRuntimeState(stackId, "ready", null);
      return runtime;
    }
    if (!onDemand) return current;
    // On demand from now on: the loaded runtime is adopted as it is, and unloads when idle.
    // (Loaded again by a request after it unloads, as any on-demand stack's.)
    const demand = adopting(current);
    this.record(stackId, { residency: "on_demand", state: "ready" });
    return demand;
  }

  /** An `always` stack's runtime as the book counts it: what it holds loaded now (see `counted`). */
  private pinned(stackId: string, name: string): Resident {
    return pinned(stackId, name, () => this.counted(stackId));
  }

  /** What a stack's runtime counts against the budget: what it says it holds loaded, else the estimate at its context. */
  private counted(stackId: string, runtime = this.runtimes.get(stackId)): number {
    return runtime?.memoryBytes || (this.memoryOf.get(stackId)?.(runtime?.contextSize ?? 0) ?? 0);
  }

  /** A runtime's state changed on its own: recorded, and told to the relay. */
  private stateChanged(stackId: string, state: RuntimeState, error: string | null, detail?: StateDetail): void {
    if (!this.hosted.has(stackId)) return;
    this.record(stackId, { state, error });
    this.deps.onRuntimeState(stackId, state, error, detail);
  }

  /** Stops every runtime. */
  async close(): Promise<void> {
    const all = [...this.runtimes.values()];
    this.runtimes.clear();
    await Promise.allSettled(all.map((r) => r.close()));
  }
}
