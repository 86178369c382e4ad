const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

/** What a model needs in memory once loaded, as both the relay's compatibility rules and the agent's budget count it. */
export interface MemoryNeed {
  /** Everything: weights, KV cache and overhead, bytes. */
  totalBytes: number;
  /** The KV cache for `sequences` × `context` tokens, bytes. */
  kvBytes: number;
  /** The context counted (the one asked, never past what the model was trained for). */
  context: number;
}

/** What a runtime needs beside its weights and KV cache (compute buffers, the runtime itself): 5% of the weights plus 256 MiB. */
export function runtimeOverheadBytes(weightsBytes: number): number {
  return Math.round(0.05 * weightsBytes + 0.25 * GiB);
}

/**
 * The memory a model needs loaded: its weights, the KV cache of each sequence's context, and the runtime's own
 * (`runtimeOverheadBytes`). An estimate, the same in the relay's compatibility rules and the agent's budget before
 * a model loads (a loaded GGUF model then counts what node-llama-cpp says it holds).
 */
export function memoryNeed(weightsBytes: number, kvBytesPerToken: number | null, contextSize: number, trainContextSize: number | null, sequences: number): MemoryNeed {
  const context = Math.min(contextSize, trainContextSize ?? contextSize);
  const kvBytes = (kvBytesPerToken ?? 0) * context * sequences;
  return { totalBytes: Math.round(weightsBytes + kvBytes) + runtimeOverheadBytes(weightsBytes), kvBytes, context };
}

/** A size in words: GiB with one decimal (none from 100 GiB), MiB under 1 GiB. */
export function sizeInWords(n: number): string {
  return n < GiB ? `${(n / MiB).toFixed(n < 10 * MiB ? 1 : 0).replace(/\.0$/, "")} MiB` : `${(n / GiB).toFixed(n < 100 * GiB ? 1 : 0).replace(/\.0$/, "")} GiB`;
}
