export { messagesCodec } from "./messages-codec.js";
export { decodeMessagesRequest } from "./decode-messages-request.js";
export { countTokensCodec, decodeCountTokensRequest } from "./count-tokens-codec.js";
