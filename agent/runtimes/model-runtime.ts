import type { ChatInput, TokenEvent, Usage } from "../../proto/index.js";

export type { ChatInput };

/**
 * What a runtime yields: the link's one token vocabulary, text as it is produced, then one `end` whose
 * usage covers the whole request. A runtime never yields `canceled`: a canceled request throws.
 */
export type RuntimeEvent = TokenEvent;

/** Tokens a request has used so far; a runtime updates it as it goes, so a canceled request can still be charged. */
export type TokenUsage = Usage;

/** Options of {@link ModelRuntime.chat}. */
export interface ChatOptions {
  signal?: AbortSignal;
  /** Filled in while generating (prompt tokens once counted, completion tokens per token): read when a request is canceled or fails midway. */
  usage?: TokenUsage;
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
   * Generates a reply as a token stream. Aborting `signal`, or leaving the loop
   * early, stops generation. Throws MakinaError `context_length_exceeded` when the
   * prompt plus `maxTokens` does not fit.
   */
  chat(input: ChatInput, options?: ChatOptions): AsyncIterable<RuntimeEvent>;
  /** Unloads the model. Idempotent. */
  close(): Promise<void>;
}
