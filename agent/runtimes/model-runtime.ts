import { MakinaError, type ChatInput, type TokenEvent, type Usage } from "../../proto/index.js";

export type { ChatInput };

/**
 * What a runtime yields: the link's one token vocabulary, text as it is produced, then one `end` whose usage
 * covers the whole request; or, when the request is canceled or fails after the runtime began it, one
 * `stopped` with the error and the usage until then (so a canceled request is still charged). Nothing
 * follows either. A runtime refusing a request before it began (nothing used) may throw instead.
 */
export type RuntimeEvent = TokenEvent | StoppedEvent;

/** The last event of a request canceled (`error.code` "canceled") or failed midway: what it used until then. */
export interface StoppedEvent {
  type: "stopped";
  error: MakinaError;
  usage: Usage;
}

/** Options of {@link ModelRuntime.chat}. */
export interface ChatOptions {
  signal?: AbortSignal;
}

/** A model loaded in a runtime, ready to serve chat requests. */
export interface ModelRuntime {
  /** Tokens of context each request gets; 0 when the runtime does not say. */
  readonly contextSize: number;
  /** Where it serves: `unix:/…` for a GGUF model process, or the local base URL of its server. */
  readonly endpoint: string;
  /** The process serving it, when the agent runs one. */
  readonly pid?: number;
  /** An embedding model (by its file's header): it answers embeddings and refuses chats. Absent: not known to be one. */
  readonly embeddingModel?: boolean;
  /**
   * The memory the runtime says its loaded model holds (GGUF: node-llama-cpp's model size and context state, plus
   * the runtime's own as the estimate counts it), bytes; absent or 0: it does not say (the estimate is counted).
   */
  readonly memoryBytes?: number;
  /**
   * Generates a reply as a token stream. Aborting `signal` ends it with `stopped` (canceled); leaving the loop
   * early stops generation. Throws MakinaError `context_length_exceeded` when the prompt plus `maxTokens` does not fit.
   */
  chat(input: ChatInput, options?: ChatOptions): AsyncIterable<RuntimeEvent>;
  /** Unloads the model. Idempotent. */
  close(): Promise<void>;
  /**
   * Frees the accelerator's memory and keeps the process (vLLM's sleep mode, level 1: its weights go to the CPU's
   * memory, its KV cache is dropped); present only on a runtime that can. {@link wake} takes it back, many times
   * faster than a cold start.
   */
  sleep?(): Promise<void>;
  /** Loads a sleeping runtime's weights back into the accelerator's memory. */
  wake?(): Promise<void>;
}

/** The `stopped` event of a request that `err` ended (the signal's reason when it was canceled). */
export function stoppedBy(err: unknown, usage: Usage, signal?: AbortSignal): StoppedEvent {
  return { type: "stopped", error: MakinaError.from(signal?.aborted ? signal.reason : err), usage: { ...usage } };
}
