import type { Llama } from "node-llama-cpp";
import { MakinaError, type Command, type CommandProgress, type CommandResult, type Logger } from "../../proto/index.js";
import type { AgentConfig } from "../config.js";
import type { ModelStore } from "../models/model-store.js";
import { loadGgufModel } from "../runtimes/gguf/gguf-runtime.js";
import type { ModelRuntime } from "../runtimes/model-runtime.js";

/** What the host needs from its surroundings, passed in by `startAgent`. */
export interface StackHostDeps {
  config: AgentConfig;
  models: ModelStore;
  /** Loads llama.cpp once, on first use. */
  llama: () => Promise<Llama>;
  log: Logger;
}

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
}

/**
 * The stacks this machine serves: runs the deploy commands the relay sends and
 * keeps each configured stack's loaded model.
 */
export class StackHost {
  private readonly runtimes = new Map<string, ModelRuntime>();
  private readonly modelPaths = new Map<string, string>();
  private readonly hosted = new Map<string, HostedStack>();

  /** What this machine serves, for `runtime list` and `model list`. */
  list(): HostedStack[] {
    return [...this.hosted.values()];
  }

  private record(stackId: string, patch: Partial<HostedStack> & Pick<HostedStack, "state">): void {
    const previous = this.hosted.get(stackId);
    this.hosted.set(stackId, {
      stackId,
      modelId: "",
      runtime: "gguf",
      endpoint: "in-process",
      modelRef: "",
      modelPath: null,
      modelSha256: null,
      modelSizeBytes: null,
      contextSize: null,
      error: null,
      ...previous,
      ...patch,
      since: previous?.state === patch.state ? previous.since : Date.now(),
    });
  }

  constructor(private readonly deps: StackHostDeps) {}

  /** The runtime serving a stack, if it is configured. */
  runtime(stackId: string): ModelRuntime | undefined {
    return this.runtimes.get(stackId);
  }

  /** Runs one deploy step; progress goes to `onProgress`. */
  async run(command: Command, onProgress: (p: Omit<CommandProgress, "commandId">) => void, signal?: AbortSignal): Promise<Omit<CommandResult, "commandId">> {
    const empty = { error: undefined, modelPath: "", modelSha256: "", modelSizeBytes: 0, contextSize: 0 };
    const step = command.step;
    const log = this.deps.log.child({ stackId: command.stackId, step: step?.$case });
    switch (step?.$case) {
      case "installRuntime":
        if (step.value.runtime !== "gguf") throw new MakinaError("runtime_unavailable", `The ${step.value.runtime} runtime is not available on this agent yet.`);
        onProgress({ stage: "loading llama.cpp", doneBytes: 0, totalBytes: 0, bytesPerSecond: 0, etaSeconds: 0 });
        await this.deps.llama();
        return empty;
      case "pullModel": {
        const model = await this.deps.models.pull(step.value.ref, {
          expectedSha256: step.value.sha256 || undefined,
          signal,
          onProgress: (p) => onProgress({ stage: "downloading", ...p }),
        });
        log.info("model ready on disk", { path: model.path, sha256: model.sha256 });
        return { ...empty, modelPath: model.path, modelSha256: model.sha256, modelSizeBytes: model.sizeBytes };
      }
      case "configureEndpoint": {
        if (step.value.runtime !== "gguf") throw new MakinaError("runtime_unavailable", `The ${step.value.runtime} runtime is not available on this agent yet.`);
        const model = await this.deps.models.pull(step.value.modelRef, { signal });
        const current = this.runtimes.get(command.stackId);
        if (current && this.modelPaths.get(command.stackId) === model.path) {
          // A reconnect re-sends the deploy sequence: the model already loaded keeps serving.
          return { ...empty, contextSize: current.contextSize };
        }
        const described = { modelId: step.value.modelId, runtime: step.value.runtime, modelRef: step.value.modelRef, modelPath: model.path, modelSha256: model.sha256, modelSizeBytes: model.sizeBytes };
        this.record(command.stackId, { ...described, state: "loading", error: null });
        onProgress({ stage: "loading model", doneBytes: 0, totalBytes: model.sizeBytes, bytesPerSecond: 0, etaSeconds: 0 });
        const previous = this.runtimes.get(command.stackId);
        this.runtimes.delete(command.stackId);
        await previous?.close();
        let runtime: ModelRuntime;
        try {
          runtime = await loadGgufModel(await this.deps.llama(), model.path, {
            maxContextSize: this.deps.config.maxContextSize,
            sequences: this.deps.config.parallelSequences,
            threads: this.deps.config.threads,
            signal,
          });
        } catch (err) {
          // The machine's owner sees the runtime's own words in `runtime list`.
          this.record(command.stackId, { state: "failed", error: err instanceof Error ? err.message : String(err) });
          throw err;
        }
        this.runtimes.set(command.stackId, runtime);
        this.modelPaths.set(command.stackId, model.path);
        this.record(command.stackId, { state: "ready", contextSize: runtime.contextSize });
        log.info("endpoint configured", { modelId: step.value.modelId, contextSize: runtime.contextSize });
        return { ...empty, contextSize: runtime.contextSize };
      }
      case "removeStack": {
        const runtime = this.runtimes.get(command.stackId);
        this.runtimes.delete(command.stackId);
        this.modelPaths.delete(command.stackId);
        this.hosted.delete(command.stackId);
        await runtime?.close();
        return empty;
      }
      case undefined:
        throw new MakinaError("invalid_value", "A command without a step.");
    }
  }

  /** Unloads every model. */
  async close(): Promise<void> {
    const all = [...this.runtimes.values()];
    this.runtimes.clear();
    await Promise.allSettled(all.map((r) => r.close()));
  }
}
