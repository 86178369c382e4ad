import { anthropicError, type FinishReason, type MakinaError, type ServiceTier, type Usage } from "../../../proto/index.js";
import { anthropicShape } from "./anthropic-shape.js";
import type { GatewayCodec } from "../gateway/gateway-codec.js";
import type { ChatRequest } from "../chat/index.js";
import { apiKeyAuthorization } from "../api-key-header.js";
import { sendError } from "../send-json.js";
import { decodeMessagesRequest } from "./decode-messages-request.js";

/**
 * Why an answer ended, as the Messages API says it. A stop sequence and the model's own end are one reason on
 * the link: both are `end_turn` here, and `stop_sequence` is always null.
 */
const STOP_REASON: Record<FinishReason, string> = { stop: "end_turn", length: "max_tokens", tool_calls: "tool_use", canceled: "end_turn" };

/** A tool call's arguments as the `input` object the API gives: `{}` when they are not a JSON object (an answer cut by `max_tokens`). */
function inputOf(args: string): Record<string, unknown> {
  try {
    const input: unknown = JSON.parse(args);
    return typeof input === "object" && input !== null && !Array.isArray(input) ? (input as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * What a message used, in the API's words: `input_tokens` are the prompt's tokens evaluated for it, and
 * `cache_read_input_tokens` those its runtime held already (their sum is the prompt, as `count_tokens` counts it).
 */
const usageOf = (u: Usage) => ({ input_tokens: u.promptTokens - (u.cachedTokens ?? 0), output_tokens: u.completionTokens, cache_read_input_tokens: u.cachedTokens ?? 0, cache_creation_input_tokens: 0 });

/** The tier that served an answer, in the Messages API's words (`flex` is its lower tier, `batch`). */
const ANTHROPIC_TIER: Record<ServiceTier, string> = { priority: "priority", default: "standard", flex: "batch" };

/** One server-sent event as the Messages API frames it: its type named on an `event:` line and in its data. */
const frame = (type: string, fields = "") => `event: ${type}\ndata: {"type":"${type}"${fields && `,${fields}`}}\n\n`;

/**
 * `POST /v1/messages`, the Anthropic Messages API: its body, answer, event sequence and error envelope, onto the
 * gateway's one path. The key comes as `x-api-key` (Anthropic's clients) or as a bearer token; `anthropic-version`
 * and `anthropic-beta` are accepted and change nothing.
 */
export const messagesCodec: GatewayCodec<ChatRequest> = {
  label: "message",
  api: "messages",
  authorization: (req) => apiKeyAuthorization(req.headers),
  decode: decodeMessagesRequest,
  answerId: (ids) => `msg_${ids.next(24)}`,
  answer(_request, meta, { text, calls, finishReason, usage }) {
    const content: Record<string, unknown>[] = [];
    if (text !== "" || calls.length === 0) content.push({ type: "text", text });
    for (const c of calls) content.push({ type: "tool_use", id: c.id, name: c.name, input: inputOf(c.arguments) });
    return { id: meta.id, type: "message", role: "assistant", model: meta.model, content, stop_reason: STOP_REASON[finishReason], stop_sequence: null, usage: { ...usageOf(usage), service_tier: ANTHROPIC_TIER[meta.serviceTier] } };
  },
  streamEncoder(_request, meta) {
    // Content blocks in order: a text block while text comes, a tool_use block for each call; one is open at a time.
    let index = -1;
    let open: "text" | "tool" | null = null;
    const blockOfCall = new Map<number, number>();
    const close = () => {
      if (open === null) return "";
      open = null;
      return frame("content_block_stop", `"index":${index}`);
    };
    const start = (kind: "text" | "tool", block: string) => {
      const closed = close();
      index += 1;
      open = kind;
      return `${closed}${frame("content_block_start", `"index":${index},"content_block":${block}`)}`;
    };
    return {
      open: () => frame("message_start", `"message":${JSON.stringify({ id: meta.id, type: "message", role: "assistant", model: meta.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0, service_tier: ANTHROPIC_TIER[meta.serviceTier] } })}`),
      text(text) {
        if (text === "") return "";
        const opened = open === "text" ? "" : start("text", `{"type":"text","text":""}`);
        return `${opened}${frame("content_block_delta", `"index":${index},"delta":{"type":"text_delta","text":${JSON.stringify(text)}}`)}`;
      },
      toolCall(d) {
        let opened = "";
        if (d.id) {
          opened = start("tool", `{"type":"tool_use","id":${JSON.stringify(d.id)},"name":${JSON.stringify(d.name)},"input":{}}`);
          blockOfCall.set(d.index, index);
        }
        if (d.arguments === "") return opened;
        return `${opened}${frame("content_block_delta", `"index":${blockOfCall.get(d.index) ?? index},"delta":{"type":"input_json_delta","partial_json":${JSON.stringify(d.arguments)}}`)}`;
      },
      end(finishReason, usage) {
        return `${close()}${frame("message_delta", `"delta":{"stop_reason":"${STOP_REASON[finishReason]}","stop_sequence":null},"usage":${JSON.stringify(usageOf(usage))}`)}${frame("message_stop")}`;
      },
      failure: (e: MakinaError) => frame("error", `"error":${JSON.stringify({ type: anthropicError(e.mapping).type, message: e.message })}`),
    };
  },
  sendError: (res, err, log, requestId) => sendError(res, err, log, requestId, anthropicShape),
};
