import { MakinaError } from "../../../proto/index.js";
import type { GatewayCodec } from "../gateway/gateway-codec.js";
import { isPlainObject, refuse } from "../json-values.js";
import type { ChatRequest } from "../chat/index.js";
import { decodeMessagesRequest } from "./decode-messages-request.js";
import { messagesCodec } from "./messages-codec.js";

/** Parameters of a message that a count does not take: they shape an answer, and a count has none. */
const NOT_COUNTED = ["max_tokens", "stream", "stop_sequences", "temperature", "top_p", "metadata", "service_tier"];

/**
 * A count_tokens body: the Messages API's (model, system, messages, tools, tool_choice…) without what shapes an
 * answer, checked as a message is, and asked of the stack's runtime as a count only.
 */
export function decodeCountTokensRequest(body: unknown): ChatRequest {
  if (!isPlainObject(body)) throw refuse.notObject(body);
  for (const k of NOT_COUNTED) if (Object.hasOwn(body, k)) throw refuse.unknown(k);
  const request = decodeMessagesRequest({ ...body, max_tokens: 1 });
  // `maxTokens` 1: an agent older than token counts, which would take this for a chat, generates one token at most.
  return { ...request, needs: [...request.needs, "count_tokens"], input: { ...request.input, maxTokens: 1, stream: false, countOnly: true } };
}

/**
 * `POST /v1/messages/count_tokens`: the tokens of a message's prompt, counted by the stack's own model (its
 * tokenizer and chat template, tools included), on the gateway's one path. Counting uses none of the key's tokens.
 */
export const countTokensCodec: GatewayCodec<ChatRequest> = {
  ...messagesCodec,
  label: "token count",
  api: "messages/count_tokens",
  metered: false,
  decode: decodeCountTokensRequest,
  answer(_request, _meta, { text, calls, usage }) {
    // An agent older than token counts answers them as a chat (of one token): no count, and a clear reason.
    if (text !== "" || calls.length > 0) throw new MakinaError("runtime_unavailable", "The agent on this stack's machine is older than this relay and cannot count tokens: update it.", { retryAfterMs: 60_000 });
    return { input_tokens: usage.promptTokens };
  },
  streamEncoder() {
    throw new MakinaError("internal_error", "A token count is never streamed.");
  },
};
