import { MakinaError, type Command, type CommandProgress, type CommandResult, type HardwareReport, type Logger } from "../../proto/index.js";
import type { AgentConfig } from "../config.js";
import type { ModelStore } from "../models/model-store.js";
import type { ModelRuntime } from "../runtimes/model-runtime.js";
import { unmetRequirements, type RuntimeAdapter, type RuntimeContext, type RuntimeKind } from "../runtimes/runtime-adapter.js";
import { join } from "node:path";

/** Runtime states as `runtime list` shows them. */
export type RuntimeState = "loading" | "ready" | "failed";

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
  error: string | null;
  since: number;
  /** The runtime's process, when the agent runs one. */
  pid: number | null;
}

/** What the host needs from its surroundings, passed in by `startAgent`. */
export interface StackHostDeps {
  config: AgentConfig;
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
  private readonly hosted = new Map<string, HostedStack>();

  constructor(private readonly deps: StackHostDeps) {}

  /** What this machine serves, for `runtime list` and `model list`. */
  list(): HostedStack[] {
    return [...this.hosted.values()].map((h) => ({ ...h, pid: this.runtimes.get(h.stackId)?.pid ?? null }));
  }

  /** The runtime serving a stack, if it is configured and not failed. */
  runtime(stackId: string): ModelRuntime | undefined {
    return this.hosted.get(stackId)?.state === "failed" ? undefined : this.runtimes.get(stackId);
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

  private context(onProgress: (p: Omit<CommandProgress, "commandId">) => void, signal?: AbortSignal, stackId?: string): RuntimeContext {
    return {
      runtimesDir: join(this.deps.config.dataDir, "runtimes"),
      python: this.deps.config.python,
      log: this.deps.log,
      signal,
      onProgress,
      onState: stackId
        ? (state, error) => {
            if (!this.hosted.has(stackId)) return;
            this.record(stackId, { state, error });
            this.deps.onRuntimeState(stackId, state, error);
          }
        : undefined,
    };
  }

  /** Runs one deploy step; progress goes to `onProgress`. */
  async run(command: Command, onProgress: (p: Omit<CommandProgress, "commandId">) => void, signal?: AbortSignal): Promise<Omit<CommandResult, "commandId">> {
    const empty = { error: undefined, modelPath: "", modelSha256: "", modelSizeBytes: 0, contextSize: 0 };
    const step = command.step;
    const log = this.deps.log.child({ stackId: command.stackId, step: step?.$case });
    switch (step?.$case) {
      case "installRuntime": {
        const { version } = await this.adapter(step.value.runtime).install(this.context(onProgress, signal));
        log.info("runtime installed", { runtime: step.value.runtime, version });
        return empty;
      }
      case "pullModel": {
        if (pulledByRuntime(step.value.runtime, step.value.ref)) return empty;
        const model = await this.deps.models.pull(step.value.ref, {
          expectedSha256: step.value.sha256 || undefined,
          signal,
          onProgress: (p) => onProgress({ stage: "downloading", ...p }),
        });
        log.info("model ready on disk", { path: model.path, sha256: model.sha256 });
        return { ...empty, modelPath: model.path, modelSha256: model.sha256, modelSizeBytes: model.sizeBytes };
      }
      case "configureEndpoint": {
        const { runtime: kind, modelRef, modelId } = step.value;
        const adapter = this.adapter(kind);
        const model = pulledByRuntime(kind, modelRef) ? null : await this.deps.models.pull(modelRef, { signal });
        const current = this.runtimes.get(command.stackId);
        const existing = this.hosted.get(command.stackId);
        if (current && existing?.state !== "failed" && existing?.modelRef === modelRef && existing.runtime === kind) {
          // A reconnect re-sends the deploy sequence: the runtime already serving keeps serving.
          return { ...empty, contextSize: current.contextSize };
        }
        this.runtimes.delete(command.stackId);
        await current?.close();
        this.record(command.stackId, {
          state: "loading",
          modelId,
          runtime: kind,
          modelRef,
          modelPath: model?.path ?? null,
          modelSha256: model?.sha256 ?? null,
          modelSizeBytes: model?.sizeBytes ?? null,
          error: null,
        });
        onProgress({ stage: "starting the runtime", doneBytes: 0, totalBytes: model?.sizeBytes ?? 0, bytesPerSecond: 0, etaSeconds: 0 });
        let runtime: ModelRuntime;
        try {
          runtime = await adapter.start({ modelId, ref: modelRef, path: model?.path ?? null }, this.context(onProgress, signal, command.stackId));
        } catch (err) {
          // The machine's owner sees the runtime's own words in `runtime list`.
          this.record(command.stackId, { state: "failed", error: err instanceof Error ? err.message : String(err) });
          throw err;
        }
        this.runtimes.set(command.stackId, runtime);
        this.record(command.stackId, { state: "ready", endpoint: runtime.endpoint, contextSize: runtime.contextSize || null, error: null });
        log.info("endpoint configured", { modelId, runtime: kind, contextSize: runtime.contextSize });
        return { ...empty, contextSize: runtime.contextSize };
      }
      case "removeStack": {
        const runtime = this.runtimes.get(command.stackId);
        this.runtimes.delete(command.stackId);
        this.hosted.delete(command.stackId);
        await runtime?.close();
        return empty;
      }
      case undefined:
        throw new MakinaError("invalid_value", "A command without a step.");
    }
  }

  /** Stops every runtime. */
  async close(): Promise<void> {
    const all = [...this.runtimes.values()];
    this.runtimes.clear();
    await Promise.allSettled(all.map((r) => r.close()));
  }
}
