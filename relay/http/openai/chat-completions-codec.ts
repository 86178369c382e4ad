import type { ToolCallDelta } from "../../../proto/index.js";
import type { GatewayCodec } from "../gateway/gateway-codec.js";
import { sendError } from "../send-json.js";
import type { ChatRequest } from "../chat/index.js";
import { decodeChatRequest } from "./decode-chat-request.js";

/** A streamed tool-call piece as the vendor's delta: its first piece says the call's id, type and function name. */
function toolCallDelta(d: ToolCallDelta): string {
  const args = JSON.stringify(d.arguments);
  const call = d.id ? `{"index":${d.index},"id":${JSON.stringify(d.id)},"type":"function","function":{"name":${JSON.stringify(d.name)},"arguments":${args}}}` : `{"index":${d.index},"function":{"arguments":${args}}}`;
  return `{"tool_calls":[${call}]}`;
}

/** `POST /v1/chat/completions`: the vendor's chat-completions body, answer, chunks and error envelope. */
export const chatCompletionsCodec: GatewayCodec<ChatRequest> = {
  label: "chat completion",
  api: "chat/completions",
  authorization: (req) => req.headers.authorization,
  decode: decodeChatRequest,
  answerId: (ids) => `chatcmpl-${ids.next(29)}`,
  answer(_request, meta, { text, calls, finishReason, usage }) {
    const toolCalls = calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } }));
    const message = calls.length ? { role: "assistant", content: text || null, refusal: null, tool_calls: toolCalls } : { role: "assistant", content: text, refusal: null };
    return {
      id: meta.id,
      object: "chat.completion",
      created: meta.created,
      model: meta.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason }],
      usage: {
        prompt_tokens: usage.promptTokens,
        completion_tokens: usage.completionTokens,
        total_tokens: usage.promptTokens + usage.completionTokens,
        // Of the prompt's tokens, those its runtime did not evaluate again (a GGUF sequence held them).
        prompt_tokens_details: { cached_tokens: usage.cachedTokens ?? 0 },
      },
      service_tier: meta.serviceTier,
    };
  },
  streamEncoder(request, meta) {
    // The fixed part of every chunk, serialised once: each event only adds its delta.
    const head = `data: {"id":${JSON.stringify(meta.id)},"object":"chat.completion.chunk","created":${meta.created},"model":${JSON.stringify(meta.model)},"service_tier":"${meta.serviceTier}","choices":`;
    const chunk = (delta: string, finishReason: string | null) =>
      `${head}[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finishReason === null ? "null" : JSON.stringify(finishReason)}}]}\n\n`;
    return {
      open: () => chunk(`{"role":"assistant","content":""}`, null),
      text: (text) => (text === "" ? "" : chunk(`{"content":${JSON.stringify(text)}}`, null)),
      toolCall: (delta) => chunk(toolCallDelta(delta), null),
      end(finishReason, { promptTokens, completionTokens, cachedTokens = 0 }) {
        const usage = request.includeUsage
          ? `${head}[],"usage":{"prompt_tokens":${promptTokens},"completion_tokens":${completionTokens},"total_tokens":${promptTokens + completionTokens},"prompt_tokens_details":{"cached_tokens":${cachedTokens}}}}\n\n`
          : "";
        return `${chunk("{}", finishReason)}${usage}data: [DONE]\n\n`;
      },
      // An error event and no [DONE].
      failure: (e) => `data: ${JSON.stringify({ error: { message: e.message, type: e.mapping.type, param: null, code: e.code } })}\n\n`,
    };
  },
  sendError,
};
