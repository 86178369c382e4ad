export { checkChatRequest, MAX_COMPLETION_TOKENS } from "./check-chat-request.js";
export type { ChatDraft, Conversation, DraftResponseFormat, DraftTool, DraftToolChoice, MessagePlace, Named } from "./chat-draft.js";
export type { ChatRequest } from "./chat-request.js";
export { array, boolean, either, FUNCTION_NAME, imagePart, integer, modelOf, number, object, oneOf, string, toolCallOf, type ValueCheck } from "./chat-values.js";
export { SCHEMA_LIMITS, validateJsonSchema } from "./validate-json-schema.js";
