import type { InferenceRequest } from "../../proto/index.js";

/**
 * A chat request as a runtime sees it: the wire request without its routing and
 * flow-control fields. `maxTokens` 0 means what is left of the context; penalties 0 are off.
 */
export type ChatInput = Omit<InferenceRequest, "requestId" | "stackId" | "initialCredit">;

/** What a runtime yields: text as it is produced, then one `end`. */
export type RuntimeEvent =
  | { type: "text"; text: string }
  | { type: "end"; finishReason: "stop" | "length"; promptTokens: number; completionTokens: number };

/** Tokens a request has used so far; a runtime updates it as it goes, so a canceled request can still be charged. */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

/** Options of {@link ModelRuntime.chat}. */
export interface ChatOptions {
  signal?: AbortSignal;
  /** Filled in while generating (prompt tokens once counted, completion tokens per token). */
  usage?: TokenUsage;
}

/** A model loaded in a runtime, ready to serve chat requests. */
export interface ModelRuntime {
  /** Tokens of context each request gets; 0 when the runtime does not say. */
  readonly contextSize: number;
  /** Where it serves: `in-process`, or the local base URL of its server. */
  readonly endpoint: string;
  /** The process serving it, when the agent runs one. */
  readonly pid?: number;
  /**
   * Generates a reply as a token stream. Aborting `signal`, or leaving the loop
   * early, stops generation. Throws MakinaError `context_length_exceeded` when the
   * prompt plus `maxTokens` does not fit.
   */
  chat(input: ChatInput, options?: ChatOptions): AsyncIterable<RuntimeEvent>;
  /** Unloads the model. Idempotent. */
  close(): Promise<void>;
}
