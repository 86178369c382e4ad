/**
 * What the rules know of a model before it is pulled: its size on disk and how
 * much memory its KV cache takes per token of context. From the catalog, from a
 * GGUF header read with node-llama-cpp, or nothing (`null` fields).
 */
export interface ModelFacts {
  /** Bytes of weights (the download, and roughly the memory they take). */
  weightsBytes: number | null;
  /** KV-cache bytes per token of context per sequence (f16 K and V over all layers). */
  kvBytesPerToken: number | null;
  /** The context the model was trained for, tokens. */
  trainContextSize: number | null;
  /** An embedding model (by its header): it answers embeddings and no chat; absent: not known to be one. */
  embeddingModel?: boolean;
  /** A reranker (by its header's classification head): it answers rerank requests only; absent: not known to be one. */
  rankingModel?: boolean;
  /** Where these facts come from, said in the panel. */
  source: "catalog" | "gguf-header" | "pulled" | "machine" | "unknown";
}

export const UNKNOWN_MODEL: ModelFacts = Object.freeze({ weightsBytes: null, kvBytesPerToken: null, trainContextSize: null, source: "unknown" });

/** KV-cache bytes per token: K and V, f16, for every layer's key-value heads. */
export function kvBytesPerToken(layers: number, kvHeads: number, headDim: number): number {
  return 2 * layers * kvHeads * headDim * 2;
}
