import type { RuntimeKind } from "../../proto/index.js";
import { kvBytesPerToken, type ModelFacts } from "./model-facts.js";

/** A model the Forge offers by name, with what the rules need to know of it. */
export interface CatalogModel {
  /** What the stack's model reference becomes. */
  ref: string;
  /** The model id clients pass as `model`, suggested. */
  modelId: string;
  label: string;
  runtime: RuntimeKind;
  facts: ModelFacts;
}

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;
const facts = (weightsBytes: number, layers: number, kvHeads: number, headDim: number, trainContextSize: number): ModelFacts => ({
  weightsBytes,
  kvBytesPerToken: kvBytesPerToken(layers, kvHeads, headDim),
  trainContextSize,
  source: "catalog",
});

/**
 * Known models: sizes of the published files, and the architecture numbers
 * (layers, key-value heads, head size) from their configs.
 */
export const MODEL_CATALOG: readonly CatalogModel[] = Object.freeze([
  {
    ref: "hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf",
    modelId: "qwen2.5-0.5b-instruct",
    label: "Qwen2.5 0.5B Instruct · Q4_K_M · 0.4 GiB",
    runtime: "gguf",
    facts: facts(398 * MiB, 24, 2, 64, 32768),
  },
  {
    ref: "hf:bartowski/Llama-3.2-3B-Instruct-GGUF/Llama-3.2-3B-Instruct-Q4_K_M.gguf",
    modelId: "llama-3.2-3b-instruct",
    label: "Llama 3.2 3B Instruct · Q4_K_M · 1.9 GiB",
    runtime: "gguf",
    facts: facts(2.02e9, 28, 8, 128, 131072),
  },
  {
    ref: "hf:bartowski/Meta-Llama-3.1-8B-Instruct-GGUF/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf",
    modelId: "llama-3.1-8b-instruct",
    label: "Llama 3.1 8B Instruct · Q4_K_M · 4.6 GiB",
    runtime: "gguf",
    facts: facts(4.92e9, 32, 8, 128, 131072),
  },
  {
    ref: "hf:bartowski/Qwen2.5-32B-Instruct-GGUF/Qwen2.5-32B-Instruct-Q4_K_M.gguf",
    modelId: "qwen2.5-32b-instruct",
    label: "Qwen2.5 32B Instruct · Q4_K_M · 18.5 GiB",
    runtime: "gguf",
    facts: facts(19.85e9, 64, 8, 128, 32768),
  },
  {
    ref: "hf:bartowski/Llama-3.3-70B-Instruct-GGUF/Llama-3.3-70B-Instruct-Q4_K_M.gguf",
    modelId: "llama-3.3-70b-instruct",
    label: "Llama 3.3 70B Instruct · Q4_K_M · 39.6 GiB",
    runtime: "gguf",
    facts: facts(42.5e9, 80, 8, 128, 131072),
  },
  {
    ref: "Qwen/Qwen2.5-7B-Instruct",
    modelId: "qwen2.5-7b-instruct",
    label: "Qwen2.5 7B Instruct · bf16 · 14.2 GiB",
    runtime: "vllm",
    facts: facts(15.23e9, 28, 4, 128, 32768),
  },
  {
    ref: "meta-llama/Llama-3.1-8B-Instruct",
    modelId: "llama-3.1-8b-instruct",
    label: "Llama 3.1 8B Instruct · bf16 · 15 GiB (gated)",
    runtime: "vllm",
    facts: facts(16.06e9, 32, 8, 128, 131072),
  },
  {
    ref: "Qwen/Qwen2.5-72B-Instruct-AWQ",
    modelId: "qwen2.5-72b-instruct",
    label: "Qwen2.5 72B Instruct · AWQ 4-bit · 38.8 GiB",
    runtime: "vllm",
    facts: facts(41.6e9, 80, 8, 128, 32768),
  },
  {
    ref: "mlx-community/Qwen2.5-0.5B-Instruct-4bit",
    modelId: "qwen2.5-0.5b-instruct",
    label: "Qwen2.5 0.5B Instruct · 4-bit · 0.3 GiB",
    runtime: "mlx",
    facts: facts(0.28 * GiB, 24, 2, 64, 32768),
  },
  {
    ref: "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit",
    modelId: "llama-3.1-8b-instruct",
    label: "Llama 3.1 8B Instruct · 4-bit · 4.2 GiB",
    runtime: "mlx",
    facts: facts(4.52e9, 32, 8, 128, 131072),
  },
]);

/** The catalog entry with this reference (`hf:` prefix optional for hub ids). */
export function findCatalogModel(ref: string): CatalogModel | undefined {
  const bare = ref.replace(/^hf:/, "");
  return MODEL_CATALOG.find((m) => m.ref === ref || m.ref.replace(/^hf:/, "") === bare);
}
