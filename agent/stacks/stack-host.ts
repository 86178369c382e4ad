import { EMPTY_STEP_RESULT, MakinaError, type DeployStep, type HardwareReport, type Logger, type RuntimeState, type StepProgress, type StepResult } from "../../proto/index.js";
import type { ModelStore } from "../models/model-store.js";
import type { ModelRuntime } from "../runtimes/model-runtime.js";
import { layersFor } from "../layers/layers-for.js";
import { checkModelFile } from "../models/check-model-file.js";
import { unmetRequirements, type RuntimeAdapter, type RuntimeContext, type RuntimeKind, type RuntimeSetup } from "../runtimes/runtime-adapter.js";

export type { RuntimeState };

/** A stack's runtime on this machine. */
export interface HostedStack {
  stackId: string;
  modelId: string;
  runtime: string;
  state: RuntimeState;
  /** Where requests are served: `in-process` for GGUF, a local URL for server runtimes. */
  endpoint: string;
  modelRef: string;
  modelPath: string | null;
  modelSha256: string | null;
  modelSizeBytes: number | null;
  contextSize: number | null;
  /** The context the stack asked for; null: the machine's default. */
  maxContext: number | null;
  error: string | null;
  since: number;
  /** The runtime's process, when the agent runs one. */
  pid: number | null;
}

/** What the host needs from its surroundings, passed in by `startAgent`. */
export interface StackHostDeps {
  /** How runtimes are installed and run on this machine (from the agent's config): what every step's context starts from. */
  runtimeSetup: RuntimeSetup;
  models: ModelStore;
  adapters: Readonly<Record<RuntimeKind, RuntimeAdapter>>;
  hardware: () => HardwareReport;
  /** A runtime changed state on its own (a restart, a crash loop): the relay must hear of it. */
  onRuntimeState: (stackId: string, state: RuntimeState, error: string | null) => void;
  log: Logger;
}

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

  constructor(private readonly deps: StackHostDeps) {}

  /** What this machine serves, for `runtime list` and `model list`. */
  list(): HostedStack[] {
    return [...this.hosted.values()].map((h) => ({ ...h, pid: this.runtimes.get(h.stackId)?.pid ?? null }));
  }

  /** The runtime serving a stack, with its layers in front, if it is configured and not failed. */
  runtime(stackId: string): ModelRuntime | undefined {
    return this.hosted.get(stackId)?.state === "failed" ? undefined : (this.served.get(stackId) ?? this.runtimes.get(stackId));
  }

  private record(stackId: string, patch: Partial<HostedStack> & Pick<HostedStack, "state">): void {
    const previous = this.hosted.get(stackId);
    this.hosted.set(stackId, {
      stackId,
      modelId: "",
      runtime: "gguf",
      endpoint: "",
      modelRef: "",
      modelPath: null,
      modelSha256: null,
      modelSizeBytes: null,
      contextSize: null,
      maxContext: null,
      error: null,
      pid: null,
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

  private context(onProgress: (p: StepProgress) => void, signal?: AbortSignal, stackId?: string): RuntimeContext {
    return {
      ...this.deps.runtimeSetup,
      log: this.deps.log,
      signal,
      onProgress,
      onState: stackId
        ? (state, error) => {
            if (!this.hosted.has(stackId)) return;
            // While a configure starts the runtime, it says "ready" itself once it has the endpoint.
            if (state === "ready" && !this.runtimes.has(stackId)) return;
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
      case "configureEndpoint": {
        const { runtime: kind, modelRef, modelId } = step;
        const maxContext = step.maxContext || null;
        const adapter = this.adapter(kind);
        const withLayers = layersFor(step);
        const model = pulledByRuntime(kind, modelRef) ? null : await this.deps.models.pull(modelRef, { signal });
        const current = this.runtimes.get(stackId);
        const existing = this.hosted.get(stackId);
        if (current && existing?.state !== "failed" && existing?.modelRef === modelRef && existing.runtime === kind && existing.modelId === modelId && existing.modelPath === (model?.path ?? null) && existing.maxContext === maxContext) {
          // A reconnect (or an edit of the stack's layers) re-sends the deploy sequence: the runtime already serving
          // keeps serving, its layers as sent now. (A new model id restarts it: vLLM and MLX serve under that name; so
          // does another file for the same reference, a new SHA-256 pinned, and another context asked.)
          this.served.set(stackId, withLayers(current));
          return { ...empty, contextSize: current.contextSize, embeddingModel: current.embeddingModel ?? false };
        }
        this.runtimes.delete(stackId);
        this.served.delete(stackId);
        await current?.close();
        this.record(stackId, {
          state: "loading",
          modelId,
          runtime: kind,
          modelRef,
          modelPath: model?.path ?? null,
          modelSha256: model?.sha256 ?? null,
          modelSizeBytes: model?.sizeBytes ?? null,
          maxContext,
          error: null,
        });
        onProgress({ stage: "starting the runtime", doneBytes: 0, totalBytes: model?.sizeBytes ?? 0, bytesPerSecond: 0, etaSeconds: 0 });
        let runtime: ModelRuntime;
        try {
          runtime = await adapter.start({ modelId, ref: modelRef, path: model?.path ?? null, maxContext }, this.context(onProgress, signal, stackId));
        } catch (err) {
          // The machine's owner sees the runtime's own words in `runtime list`.
          this.record(stackId, { state: "failed", error: err instanceof Error ? err.message : String(err) });
          throw err;
        }
        this.runtimes.set(stackId, runtime);
        this.served.set(stackId, withLayers(runtime));
        this.record(stackId, { state: "ready", endpoint: runtime.endpoint, contextSize: runtime.contextSize || null, error: null });
        log.info("endpoint configured", { modelId, runtime: kind, contextSize: runtime.contextSize });
        return { ...empty, contextSize: runtime.contextSize, embeddingModel: runtime.embeddingModel ?? false };
      }
      case "checkModel":
        return checkModelFile(step.ref, step.runtime, log, signal);
      case "removeStack": {
        const runtime = this.runtimes.get(stackId);
        this.runtimes.delete(stackId);
        this.served.delete(stackId);
        this.hosted.delete(stackId);
        await runtime?.close();
        return empty;
      }
    }
  }

  /** Stops every runtime. */
  async close(): Promise<void> {
    const all = [...this.runtimes.values()];
    this.runtimes.clear();
    await Promise.allSettled(all.map((r) => r.close()));
  }
}
