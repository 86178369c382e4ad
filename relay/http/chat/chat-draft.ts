import type { ChatMessage } from "../../../proto/index.js";

/** A value as the client gave it (not checked yet; undefined or null: not given) and its name in the client's API. */
export interface Named<T = unknown> {
  value: T;
  name: string;
}

/** Where a message of the conversation came from in the body, for the refusals of its turn. */
export interface MessagePlace {
  /** The message: `messages[2]`, `input[4]`, `system`. */
  at: string;
  /** Of a tool result: where its call id is (`messages[2].tool_call_id`, `messages[1].content[0].tool_use_id`, `input[3].call_id`). */
  callId?: string;
}

/** A function the client offers the model, each part named as the client gave it. */
export interface DraftTool {
  name: Named;
  description: Named;
  /** Its arguments' JSON schema. */
  parameters: Named;
  strict: Named;
}

/** Whether the model may call tools, as the client said it: `function` names the one it must call. */
export type DraftToolChoice = { mode: "none" | "auto" | "required" } | { mode: "function"; function: string; functionName: string };

/** The shape the answer must have, each part named as the client gave it. */
export interface DraftResponseFormat {
  /** Where it is: `response_format`, `text.format`, `output_config.format`. */
  name: string;
  type: Named;
  schemaName: Named;
  description: Named;
  schema: Named;
  strict: Named;
}

/**
 * A chat request as an API's decoder reads it from its body, before the one domain check
 * ({@link checkChatRequest}): the conversation and the tools' shapes are read (each API has its own), the values
 * are as the client gave them, and every part carries its name in the client's API, so that a refusal names the
 * client's field as it is.
 */
export interface ChatDraft {
  model: string;
  modelName: string;
  /** The conversation in the runtime's terms; `places[i]` is where `messages[i]` came from. */
  messages: ChatMessage[];
  places: MessagePlace[];
  /** Where the conversation is: `messages`, `input`. */
  messagesName: string;
  /** Where each image part is (`messages[0].content[1].type`), in order. */
  images: string[];
  stream: boolean;
  includeUsage: boolean;
  temperature?: Named;
  topP?: Named;
  maxTokens?: Named;
  seed?: Named;
  /** A string or an array of strings. */
  stop?: Named;
  presencePenalty?: Named;
  frequencyPenalty?: Named;
  tools?: Named<DraftTool[]>;
  toolChoice?: Named<DraftToolChoice | undefined>;
  parallelToolCalls?: Named;
  responseFormat?: DraftResponseFormat;
  /** Parameters of this API beyond the domain's, given with a value that changes the output: what the runtime must honour (`value`), by the client's name. */
  needs: Named<string>[];
}

/** The conversation of a draft, as a decoder reads it message by message. */
export type Conversation = Pick<ChatDraft, "messages" | "places" | "images">;
