import { MakinaError, validateLayerOptions, type LayerOptionValue } from "../../proto/index.js";
import type { MachineBudget, ModelFacts, StackPlan } from "../compatibility/index.js";
import type { HardwareSummary, Machine, RuntimeKind, StackResidency } from "../store/index.js";

/** The agent's defaults (MAKINA_AGENT_MAX_CONTEXT, MAKINA_AGENT_PARALLEL): what memory estimates assume. */
const AGENT_DEFAULT_CONTEXT = 4096;
const AGENT_DEFAULT_SEQUENCES = 2;

/** A stack's layers as the compatibility rules read them. */
export interface PlanLayers {
  harness?: string | null;
  orchestrator?: string | null;
  /** @default true */
  endpoint?: boolean;
  /** Tokens of context per request the stack asks for; null or absent: the machine's default. */
  maxContext?: number | null;
  /** @default "always" */
  residency?: StackResidency;
}

/** The runtimes whose context a stack sets (GGUF's context, vLLM's `--max-model-len`); MLX and an existing server size their own. */
export const SIZED_CONTEXT: readonly RuntimeKind[] = ["gguf", "vllm"];

/** Refuses a context asked of a runtime that sizes its own. */
export function checkMaxContext(runtime: RuntimeKind, maxContext: number | null | undefined): void {
  if (maxContext !== null && maxContext !== undefined && !SIZED_CONTEXT.includes(runtime)) {
    throw new MakinaError("invalid_value", `'max_context' applies to the ${SIZED_CONTEXT.join(" and ")} runtimes; ${runtime === "mlx" ? "MLX" : "an existing server"} sizes its own context.`, {
      param: "max_context",
    });
  }
}

/**
 * The runtimes whose model Makina loads and unloads (`residency: on_demand`); an existing server (`openai`) is
 * not started or stopped by Makina.
 */
export const LOADED_BY_MAKINA: readonly RuntimeKind[] = ["gguf", "vllm", "mlx"];

/** Refuses an on-demand residency for a runtime Makina does not start or stop. */
export function checkResidency(runtime: RuntimeKind, residency: StackResidency | undefined): void {
  if (residency === "on_demand" && !LOADED_BY_MAKINA.includes(runtime)) {
    throw new MakinaError("invalid_value", `An existing server is not started or stopped by Makina: it is always on ('residency' on_demand is for the ${LOADED_BY_MAKINA.join(", ")} runtimes).`, {
      param: "residency",
    });
  }
}

/** One of the organization's stacks on a machine, as the machine's last inventory counts it. */
export interface CountedStack {
  stackId: string;
  /** The stack's name in the organization. */
  name: string;
  /** What it counts against the budget when loaded, bytes (0: not known). */
  bytes: number;
  residency: "always" | "on_demand";
  loaded: boolean;
  /** Its runtime's state on the machine. */
  state: string;
}

/**
 * The organization's stacks on a machine as its last inventory counts them, named as the organization names them
 * (`names`: its stacks by id); what the machine says of anything else is left out.
 */
export function stacksCounted(machine: Pick<Machine, "inventory"> | null, names: ReadonlyMap<string, string>): CountedStack[] {
  return (machine?.inventory?.runtimes ?? []).flatMap((r) => {
    const name = names.get(r.stackId);
    return name === undefined ? [] : [{ stackId: r.stackId, name, bytes: r.memoryBytes, residency: r.residency === "on_demand" ? ("on_demand" as const) : ("always" as const), loaded: r.loaded, state: r.state }];
  });
}

/** The machine's memory budget and the organization's stacks counted against it, as its last inventory said; null: not said. */
export function machineBudget(machine: Pick<Machine, "inventory"> | null, names: ReadonlyMap<string, string>): MachineBudget | null {
  const memory = machine?.inventory?.memory;
  return memory ? { budgetBytes: memory.budgetBytes, maxLoaded: memory.maxLoaded, stacks: stacksCounted(machine, names) } : null;
}

/**
 * What the compatibility rules get for a stack on a machine (or on no machine yet): the machine's hardware and
 * budget (see `machineBudget`); `stackId` once the stack exists (its own count on the machine is not one of the others).
 */
export function stackPlan(
  runtime: RuntimeKind,
  modelRef: string,
  model: ModelFacts,
  machine: { hardware: HardwareSummary | null; budget: MachineBudget | null } | null,
  layers: PlanLayers,
  modelFileProblem: string | null = null,
  stackId?: string,
): StackPlan {
  return {
    modelFileProblem,
    runtime,
    modelRef,
    model,
    hardware: machine?.hardware ?? null,
    residency: layers.residency ?? "always",
    budget: machine?.budget ?? null,
    ...(stackId !== undefined && { stackId }),
    contextSize: layers.maxContext ?? AGENT_DEFAULT_CONTEXT,
    maxContext: layers.maxContext ?? null,
    sequences: AGENT_DEFAULT_SEQUENCES,
    harness: layers.harness || null,
    orchestrator: layers.orchestrator || null,
    hasEndpoint: layers.endpoint ?? true,
  };
}

/** What the machine says of a model file it has on disk (a local path it reported), when nothing else is known. */
export function onDisk(model: ModelFacts, ref: string, machine: Machine | null): ModelFacts {
  if (model.weightsBytes !== null) return model;
  const file = machine?.inventory?.models.find((m) => m.path === ref);
  return file && file.sizeBytes > 0 ? { ...model, weightsBytes: file.sizeBytes, source: "pulled" } : model;
}

/** The model id a stack serves when none is given: the model file's name without `.gguf`. */
export function defaultModelId(modelRef: string): string {
  const last = modelRef.split(/[\\/]/).pop() ?? modelRef;
  const name = last.replace(/\.gguf$/i, "").replace(/^hf:/, "") || modelRef;
  // As a model id may be written (see the admin contract's MODEL_ID): other characters become "-".
  return name.replace(/[^A-Za-z0-9._:/@+-]/g, "-").replace(/^[^A-Za-z0-9]+/, "").slice(0, 128) || "model";
}

/** A layer's options, checked against its kind (`LAYER_OPTIONS`); options without a layer are refused. */
export function layerOptions(kind: string | null | undefined, options: unknown, layer: "harness" | "orchestrator"): Record<string, LayerOptionValue> {
  const param = `${layer}_options`;
  if (kind) return validateLayerOptions(kind, options, param);
  if (options !== undefined && options !== null && typeof options === "object" && Object.keys(options).length) {
    throw new MakinaError("invalid_value", `'${param}' needs a '${layer}'.`, { param });
  }
  return {};
}
