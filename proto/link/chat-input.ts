// What a request carries to a stack's runtime (a chat, an embeddings or a rerank request: `ChatInput`), and the
// vectors and scores it answers besides text. Part of the link's messages (link-messages.ts), in a file of its own.
import type { ServiceTier } from "../flow/service-tier.js";

/** The relevance of one document of a rerank request to its query (`index` in the request's documents; higher: more relevant). */
export interface RerankScore {
  index: number;
  score: number;
}

/** A rerank request's query and the documents to score against it. */
export interface RerankInput {
  query: string;
  documents: string[];
}

/** The most documents one rerank request may have. */
export const MAX_RERANK_DOCUMENTS = 1000;

/** The vector of one input of an embeddings request (`index` in the request's inputs). */
export interface EmbeddingVector {
  index: number;
  values: number[];
}

/** The most inputs one embeddings request may have (the vendor's limit). */
export const MAX_EMBED_INPUTS = 2048;

/** The most numbers the vectors of one embeddings request may hold in all (512 inputs of a 4,096-dimension model). */
export const MAX_EMBED_NUMBERS = 2 * 1024 * 1024;

/** One input of an embeddings request: a text, or (when `tokens` is not empty) the model's token ids. */
export interface EmbedInput {
  text: string;
  tokens: number[];
}

/** A call of one of the request's tools: `arguments` is JSON text. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** One message of a chat conversation (text parts already joined by the relay). */
export interface ChatMessage {
  role: string;
  content: string;
  /** An assistant message's tool calls. */
  toolCalls?: ToolCall[];
  /** A `tool` message: the id of the call whose result it carries. */
  toolCallId?: string;
  /** The message's parts in order when it has an image (`content` still holds its text); absent or empty: `content` is all. */
  parts?: ContentPart[];
}

/** One part of a message: text, or an image by URL (`https://…` or a `data:image/…` URI) with its detail ("" when not said). */
export interface ContentPart {
  /** "text" or "image_url". */
  type: string;
  text: string;
  imageUrl: string;
  detail: string;
}

/** A function the model may call: `parametersJson` is its arguments' JSON schema as text, empty when it takes none. */
export interface ToolDefinition {
  name: string;
  description: string;
  parametersJson: string;
  strict: boolean;
}

/** Whether the model may call tools: `function` means a call of `toolChoiceFunction`. */
export type ToolChoice = "auto" | "none" | "required" | "function";

/**
 * A chat request for a stack's runtime. `maxTokens` 0 means what is left of the context; penalties 0 are
 * off; `seed` absent means random; `stream` says whether the client asked for a stream.
 */
export interface ChatInput {
  messages: ChatMessage[];
  temperature: number;
  topP: number;
  maxTokens: number;
  stop: string[];
  seed?: number | undefined;
  presencePenalty: number;
  frequencyPenalty: number;
  stream: boolean;
  /** The shape the answer must have (OpenAI's `response_format` beyond text); absent: free text. */
  responseFormat?: ResponseFormat | undefined;
  /** Sampling parameters the client left unset (`temperature`, `top_p`): their values are defaults a harness may replace. */
  unset?: string[];
  /** Functions the model may call; absent or empty: none. */
  tools?: ToolDefinition[];
  /** Absent means `auto`. */
  toolChoice?: ToolChoice;
  /** The function to call when `toolChoice` is `function`. */
  toolChoiceFunction?: string;
  /** Whether one answer may call several tools; absent: yes. */
  parallelToolCalls?: boolean;
  /** Not empty: an embeddings request (no `messages`): one `embedding` event per input, in order, then `end` (their tokens as `promptTokens`). */
  embed?: EmbedInput[];
  /** Of an embeddings request: the size of each vector; absent or 0: the model's own. */
  dimensions?: number;
  /** Present: a rerank request (no `messages`): one `score` event per document, in any order, then `end` (the tokens read as `promptTokens`). */
  rerank?: RerankInput;
  /** Count the prompt's tokens and generate nothing: the runtime yields `end` alone, with the count as `promptTokens`. */
  countOnly?: boolean;
  /** The tier the request is served at: the order in which it takes a free sequence (and vLLM's `priority`); absent: `default`. */
  serviceTier?: ServiceTier;
  /** Whose turn it takes among requests of its tier: its key's id (never the secret); absent: a turn shared by all such. */
  fairShareKey?: string;
}

/** Any JSON object, or JSON valid against a schema (OpenAI's `json_schema`, whose schema travels as JSON text). */
export interface ResponseFormat {
  type: "json_object" | "json_schema";
  /** The schema's name; empty for `json_object`. */
  name: string;
  /** The JSON schema as JSON text; empty for `json_object`. */
  schemaJson: string;
  strict: boolean;
}
