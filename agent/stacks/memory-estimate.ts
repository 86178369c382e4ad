import { memoryNeed, type HardwareReport, type Logger } from "../../proto/index.js";
import { checkModelFile } from "../models/check-model-file.js";
import type { ModelToServe, RuntimeKind } from "../runtimes/runtime-adapter.js";

/** A stack's memory, as the residency book counts it: given its runtime's context once loaded (0: not known yet). */
export type MemoryOf = (contextSize: number) => number;

/**
 * What the budget counts for a model (its weights, its KV cache at the context it gets, and the runtime's own, as
 * the compatibility panel estimates it), and whether it is an embedding model or a reranker, from its file's header (GGUF); vLLM
 * takes 90% of a GPU's memory whatever it serves; a model whose size is not known here (a hub repository a runtime
 * downloads itself, an existing server) counts 0.
 */
export async function estimateMemory(
  kind: RuntimeKind,
  spec: ModelToServe,
  sizeBytes: number | null,
  machine: { hardware: HardwareReport; contextSize: number; sequences: number },
  log: Logger,
  signal?: AbortSignal,
): Promise<{ memoryOf: MemoryOf; embeddingModel?: boolean; rankingModel?: boolean }> {
  if (kind === "gguf" && spec.path) {
    const facts = await checkModelFile(spec.path, kind, log, signal);
    const size = facts.modelSizeBytes ?? sizeBytes ?? 0;
    const train = facts.trainContextSize || null;
    return { memoryOf: (loaded) => memoryNeed(size, facts.kvBytesPerToken ?? null, loaded || (spec.maxContext ?? machine.contextSize), train, machine.sequences).totalBytes, embeddingModel: facts.embeddingModel, rankingModel: facts.rankingModel };
  }
  const gpu = Math.max(0, ...machine.hardware.gpus.map((g) => g.vramBytes));
  if (kind === "vllm" && gpu > 0) return { memoryOf: () => Math.floor(0.9 * gpu) };
  const known = sizeBytes ?? 0;
  if (kind === "openai" || known === 0) return { memoryOf: () => 0 };
  return { memoryOf: () => memoryNeed(known, null, 0, null, 0).totalBytes };
}
