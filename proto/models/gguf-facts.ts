import type { GgufFileInfo } from "node-llama-cpp";

/** Context size at which the KV cache per token is estimated. */
const PROBE_CONTEXT = 4096;

/** What the compatibility rules need of a GGUF model, read from its header (a URL's, or a file's on a machine). */
export interface GgufFacts {
  /** Bytes of weights. */
  weightsBytes: number;
  /** KV-cache bytes per token of context per sequence. */
  kvBytesPerToken: number;
  /** The context the model was trained for, tokens; null when the header does not say. */
  trainContextSize: number | null;
  /** An embedding model: it answers embeddings, and no chat ({@link isEmbeddingModel}). */
  embeddingModel: boolean;
  /** A reranker, as node-llama-cpp's ranking context takes one: it answers rerank requests only. */
  rankingModel: boolean;
}

/** Architectures that encode and never generate: embedding models whatever their pooling. */
const ENCODER_ARCHITECTURES = new Set(["bert", "nomic-bert", "nomic-bert-moe", "jina-bert-v2", "jina-bert-v3", "neo-bert", "modern-bert", "t5encoder"]);

/**
 * Whether a GGUF model is made for embeddings, from its header: an encoder's architecture, or a pooling type
 * (mean, CLS or last token) that the converter writes for embedding models alone. Such a model answers
 * `/v1/embeddings` and is refused as a chat.
 */
export function isEmbeddingModel(metadata: GgufFileInfo["metadata"]): boolean {
  const architecture = String(metadata.general?.architecture ?? "");
  if (ENCODER_ARCHITECTURES.has(architecture)) return true;
  const pooling = (metadata as unknown as Record<string, { pooling_type?: unknown } | undefined>)[architecture]?.pooling_type;
  return pooling === 1 || pooling === 2 || pooling === 3;
}

/**
 * node-llama-cpp's estimate from a parsed header: the model's size, and its context's memory per token. The relay
 * reads headers over the network (the Forge's panel) and the agent from its disk (a local path): one estimate.
 */
export async function ggufFacts(info: GgufFileInfo): Promise<GgufFacts> {
  const { GgufInsights } = await import("node-llama-cpp");
  const insights = await GgufInsights.from(info);
  const context = insights.estimateContextResourceRequirements({ contextSize: PROBE_CONTEXT, modelGpuLayers: 0, sequences: 1 });
  // A reranker: a classification head (`cls.weight`, or `cls.output.weight` as Qwen3 rerankers have) and what
  // node-llama-cpp's ranking context needs besides. It answers rerank only (a BERT-family reranker is no embedding
  // model, whatever its architecture).
  const rankingModel = insights.supportsRanking;
  return { weightsBytes: insights.modelSize, kvBytesPerToken: Math.ceil(context.cpuRam / PROBE_CONTEXT), trainContextSize: insights.trainContextSize ?? null, embeddingModel: !rankingModel && isEmbeddingModel(info.metadata), rankingModel };
}
