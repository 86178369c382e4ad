import { HARNESS_KINDS, honouredParameters, memoryNeed, ORCHESTRATOR_KINDS, RUNTIME_LAYERS, sizeInWords, type RuntimeKind } from "../../proto/index.js";
import type { HardwareSummary } from "../store/index.js";
import type { ModelFacts } from "./model-facts.js";

/** One line of the compatibility panel: what was checked, and how it came out, in words. */
export interface CompatibilityCheck {
  topic: "runtime" | "format" | "memory" | "disk" | "endpoint" | "layers";
  level: "ok" | "warn" | "fail";
  message: string;
  /** The choice the check is about, as stack create names it (`machine`, `runtime`, `model`, `harness`, `orchestrator`, `endpoint`): where a form says it. */
  param: CheckedParam;
}

/** The choices of a stack a check can be about. */
export type CheckedParam = "machine" | "runtime" | "model" | "max_context" | "harness" | "orchestrator" | "endpoint";

/** The choice each topic's checks are about (a layer's check names its layer itself). */
const PARAM_OF_TOPIC: Record<CompatibilityCheck["topic"], CheckedParam> = {
  runtime: "runtime",
  format: "model",
  memory: "model",
  disk: "model",
  endpoint: "endpoint",
  layers: "harness",
};

/** A check in words, about the choice its topic is (unless it names another). */
type Said = Omit<CompatibilityCheck, "param"> & { param?: CheckedParam };

/** The verdict on a stack: `ok` is false when any check fails, null while the machine's hardware or the model is unknown. */
export interface Compatibility {
  ok: boolean | null;
  checks: CompatibilityCheck[];
  /** The APIs the stack answers, by its runtime, layers and model: chat (with the Responses and Messages APIs on it), embeddings, rerank. */
  serves: ServedApi[];
}

/** What a stack can answer: chat requests (of every chat API), embeddings requests and rerank requests. */
export type ServedApi = "chat" | "embeddings" | "rerank";

/** A stack as the rules see it: the Forge's choices, or a stack being created or deployed. */
export interface StackPlan {
  runtime: RuntimeKind;
  modelRef: string;
  model: ModelFacts;
  /** The machine's hardware; null until it first connects. */
  hardware: HardwareSummary | null;
  /** Context per request, tokens (the agent's setting, capped by the model's trained context). */
  contextSize: number;
  /** The context the stack asks for itself; null or absent: the machine's default. */
  maxContext?: number | null;
  /** Requests served at once, each with its own KV cache. */
  sequences: number;
  harness: string | null;
  orchestrator: string | null;
  hasEndpoint: boolean;
  /** Why the machine cannot use the model at its local path (nothing there, not a GGUF file), as the machine said; null when it can, or cannot be asked. */
  modelFileProblem?: string | null;
  /** `on_demand`: judged by whether it fits the machine's memory budget alone; absent: `always`. */
  residency?: "always" | "on_demand";
  /** The machine's memory budget and the stacks counted against it, as its agent last said; null or absent: not said. */
  budget?: MachineBudget | null;
  /** The stack judged, once it exists: its own count is not one of the others. */
  stackId?: string;
}

/** A machine's memory budget (`--memory-budget`, `--max-loaded`: 0 no limit) and what each of its stacks counts against it when loaded, and whether it is. */
export interface MachineBudget {
  budgetBytes: number;
  maxLoaded: number;
  stacks: { stackId: string; name: string; bytes: number; residency: "always" | "on_demand"; loaded: boolean }[];
}

const GiB = 1024 ** 3;
/** A size in words. */
const gib = sizeInWords;

function runtimeCheck(plan: StackPlan, hw: HardwareSummary): Said[] {
  const nvidia = hw.gpus.some((g) => /nvidia/i.test(g.vendor));
  const where = `${hw.platform}/${hw.arch}`;
  switch (plan.runtime) {
    case "gguf":
      return [{ topic: "runtime", level: "ok", message: `GGUF runs on ${where}${hw.accelerators.length ? ` with ${hw.accelerators.join("/")} offload` : " on the CPU"}.` }];
    case "vllm": {
      const problems: Said[] = [];
      if (hw.platform !== "linux") problems.push({ topic: "runtime", level: "fail", message: `vLLM needs Linux; this machine runs ${where}.` });
      if (!nvidia) problems.push({ topic: "runtime", level: "fail", message: "vLLM needs an NVIDIA GPU; none was detected on this machine." });
      else if (!hw.accelerators.includes("cuda")) problems.push({ topic: "runtime", level: "fail", message: "vLLM needs CUDA, but no CUDA backend is usable here: is the NVIDIA driver installed?" });
      return problems.length ? problems : [{ topic: "runtime", level: "ok", message: "Linux with an NVIDIA GPU and CUDA: vLLM can run." }];
    }
    case "mlx":
      return hw.platform === "darwin" && hw.arch === "arm64"
        ? [{ topic: "runtime", level: "ok", message: "Apple silicon: MLX can run." }]
        : [{ topic: "runtime", level: "fail", message: `MLX needs macOS on Apple silicon; this machine runs ${where}.` }];
    case "openai":
      return [{ topic: "runtime", level: "ok", message: "An OpenAI-compatible server already running on the machine is used as it is." }];
  }
}

function formatCheck(plan: StackPlan): Said {
  const ref = plan.modelRef;
  const gguf = /\.gguf($|\?)/i.test(ref);
  switch (plan.runtime) {
    case "gguf":
      return gguf
        ? { topic: "format", level: "ok", message: "A GGUF file: the GGUF runtime loads it." }
        : { topic: "format", level: "fail", message: "The GGUF runtime needs a .gguf file (a path, an https:// URL or hf:owner/repo/file.gguf)." };
    case "vllm":
      return gguf
        ? { topic: "format", level: "fail", message: "vLLM serves Hugging Face repositories (safetensors); run a .gguf file on the GGUF runtime." }
        : { topic: "format", level: "ok", message: "A model repository or directory: vLLM loads it." };
    case "mlx":
      return gguf
        ? { topic: "format", level: "fail", message: "MLX serves MLX-format repositories (e.g. mlx-community/…); run a .gguf file on the GGUF runtime." }
        : { topic: "format", level: "ok", message: "An MLX model repository: mlx_lm loads it." };
    case "openai":
      return { topic: "format", level: "ok", message: "The name is passed to the server as it is." };
  }
}

/** The memory the stack's model needs loaded (the estimate the agent counts against its budget); null while its size is unknown. */
function neededBytes(plan: StackPlan): number | null {
  const { weightsBytes, kvBytesPerToken, trainContextSize } = plan.model;
  // vLLM takes 90% of its GPU's memory, whatever it serves: the agent counts it so.
  const gpu = Math.max(0, ...(plan.hardware?.gpus.map((g) => g.vramBytes) ?? []));
  if (plan.runtime === "vllm" && gpu > 0) return Math.floor(0.9 * gpu);
  if (weightsBytes === null) return null;
  return memoryNeed(weightsBytes, kvBytesPerToken, plan.contextSize, trainContextSize, plan.sequences).totalBytes;
}

function memoryCheck(plan: StackPlan, hw: HardwareSummary): Said | null {
  if (plan.runtime === "openai") return null;
  const { weightsBytes, kvBytesPerToken, trainContextSize } = plan.model;
  if (weightsBytes === null) {
    return { topic: "memory", level: "warn", message: "The model's size is unknown before it is pulled, so memory cannot be checked yet." };
  }
  const { totalBytes: need, kvBytes: kv, context } = memoryNeed(weightsBytes, kvBytesPerToken, plan.contextSize, trainContextSize, plan.sequences);
  const what = `about ${gib(need)} (${gib(weightsBytes)} weights${kvBytesPerToken ? ` + ${gib(kv)} KV cache for ${plan.sequences} × ${context.toLocaleString("en-US")} tokens` : ""})`;
  const vram = hw.gpus.reduce((sum, g) => sum + g.vramBytes, 0);
  const vramUnknown = hw.gpus.some((g) => g.vramBytes === 0);
  if (plan.runtime === "vllm") {
    if (vram === 0) return { topic: "memory", level: "warn", message: `Needs ${what} of GPU memory, but the GPU's VRAM is unknown (install the NVIDIA driver).` };
    const usable = 0.9 * vram;
    return need <= usable
      ? { topic: "memory", level: "ok", message: `Needs ${what}; fits in ${gib(vram)} of VRAM.` }
      : { topic: "memory", level: "fail", message: `Needs ${what}, more than the ${gib(usable)} of VRAM vLLM may use (90% of ${gib(vram)}).` };
  }
  if (plan.runtime === "mlx") {
    const usable = 0.75 * hw.memoryBytes;
    if (need <= usable) return { topic: "memory", level: "ok", message: `Needs ${what}; fits in the ${gib(usable)} of unified memory the GPU may use.` };
    if (need <= hw.memoryBytes) return { topic: "memory", level: "warn", message: `Needs ${what}, more than the GPU's usual share (75% of ${gib(hw.memoryBytes)}): it may swap.` };
    return { topic: "memory", level: "fail", message: `Needs ${what}, more than this Mac's ${gib(hw.memoryBytes)} of memory.` };
  }
  const offload = hw.accelerators.length > 0 && vram > 0;
  if (offload && need <= vram) return { topic: "memory", level: "ok", message: `Needs ${what}; fits in ${gib(vram)} of VRAM.` };
  if (offload && need <= vram + 0.9 * hw.memoryBytes) {
    return { topic: "memory", level: "warn", message: `Needs ${what}, more than ${gib(vram)} of VRAM: part of it runs on the CPU, slower.` };
  }
  if (need <= 0.9 * hw.memoryBytes) {
    return { topic: "memory", level: "ok", message: `Needs ${what}; fits in ${gib(hw.memoryBytes)} of RAM${vramUnknown ? " (GPU VRAM unknown)" : ""}.` };
  }
  if (need <= hw.memoryBytes) return { topic: "memory", level: "warn", message: `Needs ${what} of ${gib(hw.memoryBytes)} RAM: little is left for anything else.` };
  return { topic: "memory", level: "fail", message: `Needs ${what}, more than the machine's ${gib(hw.memoryBytes)} of RAM${vram ? ` and ${gib(vram)} of VRAM` : ""}.` };
}

/**
 * The stack against the machine's memory budget, as its agent keeps it: an on-demand stack larger than the whole
 * budget is refused (it could never load); one that does not fit beside the machine's always-loaded stacks (which
 * are never unloaded), in bytes or in `--max-loaded`, is warned of; the rest it shares with idle on-demand models,
 * unloaded for it. Says what it shares the machine with.
 */
function budgetCheck(plan: StackPlan, need: number): Said | null {
  const budget = plan.budget;
  if (!budget || budget.budgetBytes <= 0 || plan.runtime === "openai") return null;
  const total = budget.budgetBytes;
  const others = budget.stacks.filter((s) => s.stackId !== plan.stackId);
  const pinned = others.filter((s) => s.residency === "always" && s.loaded);
  const held = pinned.reduce((sum, s) => sum + s.bytes, 0);
  const slotsFull = budget.maxLoaded > 0 && pinned.length >= budget.maxLoaded;
  const budgetWords = `this machine's memory budget (${gib(total)}, its agent's --memory-budget)`;
  const beside = pinned.length ? ` beside the ${gib(held)} its always-loaded stacks hold (${named(pinned)})` : "";
  const onDemand = plan.residency === "on_demand";
  const how = onDemand ? "Loaded on demand" : "Always loaded";
  if (onDemand && need > total) return { topic: "memory", level: "fail", message: `${how}, it needs about ${gib(need)}, more than ${budgetWords}: it could never be loaded.` };
  if (need + held > total || slotsFull) {
    const why = slotsFull
      ? `the machine keeps at most ${budget.maxLoaded} loaded (its agent's --max-loaded), and its always-loaded stacks (${named(pinned)}) take ${budget.maxLoaded === 1 ? "that place" : "every place"}`
      : `it needs about ${gib(need)}${beside}, more than ${budgetWords}`;
    // Said, not refused: the machine is the judge (what it last reported may be a moment old), and refuses the
    // deploy of an always stack, or the load of an on-demand one, while they are loaded.
    return onDemand
      ? { topic: "memory", level: "warn", message: `${how}: ${why}, so the machine would refuse to load it while they are loaded.` }
      : { topic: "memory", level: "warn", message: `${how}: ${why}, so the machine would refuse its deploy while they are loaded.` };
  }
  const idle = others.filter((s) => s.residency === "on_demand");
  if (!onDemand && idle.length === 0) return null;
  const shares = idle.length ? ` It shares the rest with ${named(idle)}: idle on-demand models are unloaded when it needs their room, least recently used first, never one serving a request.` : "";
  return { topic: "memory", level: "ok", message: `${how}, it fits ${budgetWords}${beside}.${shares}` };
}

/** Stacks by name, five at most and how many more. */
function named(list: MachineBudget["stacks"]): string {
  const shown = list.slice(0, 5).map((s) => (s.bytes ? `${s.name} (${gib(s.bytes)})` : s.name));
  return list.length > 5 ? `${shown.join(", ")} and ${list.length - 5} more` : shown.join(", ");
}

/** A context asked past what the model was trained for: GGUF serves the model's, vLLM refuses to start. */
function contextCheck(plan: StackPlan): Said | null {
  const asked = plan.maxContext;
  const trained = plan.model.trainContextSize;
  if (!asked || !trained || asked <= trained) return null;
  const n = (x: number) => x.toLocaleString("en-US");
  return plan.runtime === "vllm"
    ? { topic: "memory", param: "max_context", level: "fail", message: `vLLM refuses a context longer than the model's ${n(trained)} tokens; ask ${n(trained)} or less.` }
    : { topic: "memory", param: "max_context", level: "warn", message: `The model was trained for ${n(trained)} tokens: the runtime serves ${n(trained)}, not the ${n(asked)} asked.` };
}

function diskCheck(plan: StackPlan, hw: HardwareSummary): Said | null {
  const size = plan.model.weightsBytes;
  if (size === null || plan.runtime === "openai" || !/^(hf:|https?:\/\/)|^[\w.-]+\/[\w.-]+$/.test(plan.modelRef)) return null;
  const free = Math.max(0, ...hw.disks.map((d) => d.freeBytes));
  if (hw.disks.length === 0) return { topic: "disk", level: "warn", message: `The download takes ${gib(size)}; the machine reported no disks.` };
  return size * 1.05 <= free
    ? { topic: "disk", level: "ok", message: `The download takes ${gib(size)}; ${gib(free)} is free.` }
    : { topic: "disk", level: "fail", message: `The download takes ${gib(size)}, but the largest free space on the machine is ${gib(free)}.` };
}

function layerChecks(plan: StackPlan): Said[] {
  const checks: Said[] = [];
  const supported = RUNTIME_LAYERS[plan.runtime];
  for (const [layer, kind, known, runs] of [
    ["harness", plan.harness, HARNESS_KINDS as readonly string[], supported.harness],
    ["orchestrator", plan.orchestrator, ORCHESTRATOR_KINDS as readonly string[], supported.orchestrator],
  ] as const) {
    if (!kind) continue;
    if (!known.includes(kind)) checks.push({ topic: "layers", param: layer, level: "fail", message: `Unknown ${layer} '${kind}'; the kinds are ${known.join(", ")}.` });
    else if (!runs.includes(kind)) checks.push({ topic: "layers", param: layer, level: "fail", message: `The ${kind} ${layer} does not run on the ${plan.runtime} runtime yet.` });
    else checks.push({ topic: "layers", param: layer, level: "ok", message: `The ${kind} ${layer} runs on ${plan.runtime}.` });
  }
  return checks;
}

/**
 * The one set of compatibility rules: runtime against the machine's OS, arch and
 * accelerators; model format against runtime; estimated memory (weights plus KV
 * cache for the context) against RAM or VRAM; disk for the download; the
 * Endpoint layer; harness and orchestrator kinds the runtime runs. Pure: the
 * Forge's panel and stack create/deploy call it with the same plan.
 */
export function checkStack(plan: StackPlan): Compatibility {
  const said: Said[] = [];
  const hw = plan.hardware;
  if (hw) said.push(...runtimeCheck(plan, hw));
  else said.push({ topic: "runtime", param: "machine", level: "warn", message: "The machine has not connected yet, so its hardware is unknown." });
  // No model chosen yet (the Forge's first look): nothing to say of its format, memory or disk, and no verdict.
  const model = plan.modelRef.trim() !== "";
  // What the machine says of the file at a path comes instead of "the format is right" (which the name alone says),
  // and leaves nothing to size.
  const fileProblem = model ? plan.modelFileProblem : null;
  if (model) {
    const format = formatCheck(plan);
    if (format.level !== "ok" || !fileProblem) said.push(format);
    if (fileProblem) said.push({ topic: "format", level: "fail", message: fileProblem });
  }
  if (hw && model && !fileProblem) {
    const memory = memoryCheck(plan, hw);
    if (memory) said.push(memory);
    const need = neededBytes(plan);
    const budget = need === null ? null : budgetCheck(plan, need);
    if (budget) said.push(budget);
    const context = contextCheck(plan);
    if (context) said.push(context);
    const disk = diskCheck(plan, hw);
    if (disk) said.push(disk);
  }
  said.push(...layerChecks(plan));
  const kind = modelKind(plan.model);
  const serves = servedApis(plan.runtime, plan.harness, plan.orchestrator, kind);
  said.push(
    plan.hasEndpoint
      ? serves.length === 0
        ? { topic: "endpoint", level: "fail", message: `${kind === "ranking" ? "A reranker answers rerank requests" : "An embedding model answers embeddings"} only, and ${plan.orchestrator ? `the ${plan.orchestrator} orchestrator answers chats only` : `the ${plan.runtime} runtime has ${kind === "ranking" ? "no rerank" : "no embeddings"}`}: no request could reach it.` }
        : { topic: "endpoint", level: "ok", message: `Reachable through the API as its model id, for ${servedWords(serves)}${servesWhy(plan, kind)}.` }
      : { topic: "endpoint", level: "warn", message: "No Endpoint layer: the stack runs, but no API request can reach it." },
  );
  const checks = said.map((c): CompatibilityCheck => ({ ...c, param: c.param ?? PARAM_OF_TOPIC[c.topic] }));
  const failed = checks.some((c) => c.level === "fail");
  return { ok: failed ? false : hw && model ? true : null, checks, serves };
}

/** What a model is for, by its header: chats, embeddings only, or rerank only. */
export type ModelKind = "chat" | "embedding" | "ranking";

/** A model's kind from what is known of it (a chat model unless its header said otherwise). */
export function modelKind(model: { embeddingModel?: boolean; rankingModel?: boolean }): ModelKind {
  return model.rankingModel ? "ranking" : model.embeddingModel ? "embedding" : "chat";
}

/**
 * The APIs a stack of this runtime and layers answers: chat, unless its model is an embedding model or a reranker;
 * embeddings where its runtime makes them and no orchestrator stands in front; rerank from a reranker, or passed
 * through to a server (vLLM, OpenAI-compatible) that may serve it (GGUF ranks only with a reranker: its header says).
 */
export function servedApis(runtime: RuntimeKind, harness: string | null, orchestrator: string | null, kind: ModelKind = "chat"): ServedApi[] {
  const honoured = honouredParameters(runtime, harness, orchestrator);
  const embeds = honoured.includes("embeddings");
  const reranks = honoured.includes("rerank");
  if (kind === "ranking") return reranks ? ["rerank"] : [];
  if (kind === "embedding") return embeds ? ["embeddings"] : [];
  return [...(["chat"] as const), ...(embeds ? (["embeddings"] as const) : []), ...(reranks && runtime !== "gguf" ? (["rerank"] as const) : [])];
}

/** The APIs served, in words: "chat only", "chat and embeddings", "chat, embeddings and rerank", "rerank only". */
function servedWords(serves: ServedApi[]): string {
  if (serves.length === 1) return `${serves[0]} only`;
  return `${serves.slice(0, -1).join(", ")} and ${serves.at(-1)}`;
}

/** Why a stack serves what it does, in words. */
function servesWhy(plan: StackPlan, kind: ModelKind): string {
  if (kind === "ranking") return " (a reranker: chat and embeddings requests are refused)";
  if (kind === "embedding") return " (an embedding model: chat requests are refused)";
  if (servedApis(plan.runtime, plan.harness, plan.orchestrator).includes("embeddings")) return plan.runtime === "gguf" ? " (embeddings from the model's own embedding context)" : " (passed to its server: what its model does not serve, the server refuses)";
  if (plan.orchestrator) return ` (the ${plan.orchestrator} orchestrator answers chats only)`;
  return ` (the ${plan.runtime} runtime has no embeddings)`;
}

/** The reasons a plan is refused, in one sentence; empty when nothing fails. */
export function refusalReasons(result: Compatibility): string {
  return result.checks
    .filter((c) => c.level === "fail")
    .map((c) => c.message)
    .join(" ");
}
