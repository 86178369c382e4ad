export { messagesCodec } from "./messages-codec.js";
export { anthropicShape } from "./anthropic-shape.js";
export { decodeMessagesRequest } from "./decode-messages-request.js";
export { countTokensCodec, decodeCountTokensRequest } from "./count-tokens-codec.js";
