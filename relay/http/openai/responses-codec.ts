import type { FinishReason, ToolCall, Usage } from "../../../proto/index.js";
import type { AnswerMeta, GatewayCodec } from "../gateway/gateway-codec.js";
import { sendError } from "../send-json.js";
import { decodeResponsesRequest, type ResponsesRequest } from "./decode-responses-request.js";

type OutputItem = Record<string, unknown>;

const usageOf = (u: Usage) => ({
  input_tokens: u.promptTokens,
  input_tokens_details: { cached_tokens: u.cachedTokens ?? 0 },
  output_tokens: u.completionTokens,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: u.promptTokens + u.completionTokens,
});

/** The ids of a response's items, made from its own: `msg_…` for its first message (`msg_…_<n>` for the next ones), `fc_…_<n>` for its function calls. */
const messageId = (meta: AnswerMeta, n = 0) => (n === 0 ? `msg_${meta.id.slice(5)}` : `msg_${meta.id.slice(5)}_${n}`);
const callItemId = (meta: AnswerMeta, index: number) => `fc_${meta.id.slice(5)}_${index}`;

const textPart = (text: string) => ({ type: "output_text", text, annotations: [], logprobs: [] });
const messageItem = (meta: AnswerMeta, text: string, status: string, n = 0) => ({ id: messageId(meta, n), type: "message", status, role: "assistant", content: status === "completed" ? [textPart(text)] : [] });
const callItem = (meta: AnswerMeta, index: number, call: ToolCall, status: string) => ({ id: callItemId(meta, index), type: "function_call", status, call_id: call.id, name: call.name, arguments: call.arguments });

/** The response object: in progress (no output yet), or ended with its output and usage. */
function responseObject(request: ResponsesRequest, meta: AnswerMeta, end: { finishReason: FinishReason; output: OutputItem[]; usage: Usage } | null): Record<string, unknown> {
  const cut = end?.finishReason === "length";
  const { echo } = request;
  return {
    id: meta.id,
    object: "response",
    created_at: meta.created,
    status: end === null ? "in_progress" : cut ? "incomplete" : "completed",
    ...(end === null ? {} : { completed_at: Math.floor(Date.now() / 1000) }),
    background: false,
    error: null,
    incomplete_details: cut ? { reason: "max_output_tokens" } : null,
    instructions: echo.instructions,
    max_output_tokens: echo.maxOutputTokens,
    model: meta.model,
    output: end?.output ?? [],
    parallel_tool_calls: echo.parallelToolCalls,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    service_tier: meta.serviceTier,
    // Nothing is kept: a response cannot be fetched or continued later.
    store: false,
    temperature: echo.temperature,
    text: echo.text,
    tool_choice: echo.toolChoice,
    tools: echo.tools,
    top_p: echo.topP,
    truncation: "disabled",
    usage: end ? usageOf(end.usage) : null,
    metadata: echo.metadata,
  };
}

/**
 * `POST /v1/responses`, the vendor's Responses API: its body, response object, typed events (each with its
 * `sequence_number`) and error envelope, onto the gateway's one path. Nothing is stored.
 */
export const responsesCodec: GatewayCodec<ResponsesRequest> = {
  label: "response",
  api: "responses",
  authorization: (req) => req.headers.authorization,
  decode: decodeResponsesRequest,
  answerId: (ids) => `resp_${ids.next(40)}`,
  answer(request, meta, { text, calls, finishReason, usage }) {
    const output: OutputItem[] = [];
    if (text !== "" || calls.length === 0) output.push(messageItem(meta, text, "completed"));
    calls.forEach((c, i) => output.push(callItem(meta, i, c, "completed")));
    return responseObject(request, meta, { finishReason, output, usage });
  },
  streamEncoder(request, meta) {
    let sequence = 0;
    const event = (type: string, fields: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...fields, sequence_number: sequence++ })}\n\n`;
    const output: OutputItem[] = [];
    // The item being written: the message (its text so far) or a function call (its arguments so far).
    let open: { kind: "message"; index: number; text: string; n: number } | { kind: "call"; index: number; call: ToolCall; n: number } | null = null;
    let messageCount = 0;
    const calls = new Map<number, { index: number; call: ToolCall; n: number }>();
    let callCount = 0;
    const close = (): string => {
      if (open === null) return "";
      const was = open;
      open = null;
      if (was.kind === "message") {
        const item = messageItem(meta, was.text, "completed", was.n);
        output[was.index] = item;
        const id = item.id;
        return (
          event("response.output_text.done", { item_id: id, output_index: was.index, content_index: 0, text: was.text, logprobs: [] }) +
          event("response.content_part.done", { item_id: id, output_index: was.index, content_index: 0, part: textPart(was.text) }) +
          event("response.output_item.done", { output_index: was.index, item })
        );
      }
      const item = callItem(meta, was.n, was.call, "completed");
      output[was.index] = item;
      return event("response.function_call_arguments.done", { item_id: item.id, output_index: was.index, name: was.call.name, arguments: was.call.arguments }) + event("response.output_item.done", { output_index: was.index, item });
    };
    return {
      open: () => {
        const response = responseObject(request, meta, null);
        return event("response.created", { response }) + event("response.in_progress", { response });
      },
      text(text) {
        if (text === "") return "";
        let frames = "";
        if (open?.kind !== "message") {
          frames = close();
          open = { kind: "message", index: output.length, text: "", n: messageCount++ };
          const item = messageItem(meta, "", "in_progress", open.n);
          output.push(item);
          frames += event("response.output_item.added", { output_index: open.index, item });
          frames += event("response.content_part.added", { item_id: item.id, output_index: open.index, content_index: 0, part: textPart("") });
        }
        open.text += text;
        return frames + event("response.output_text.delta", { item_id: messageId(meta, open.n), output_index: open.index, content_index: 0, delta: text, logprobs: [] });
      },
      toolCall(d) {
        let frames = "";
        let target = calls.get(d.index);
        if (d.id || target === undefined) {
          frames = close();
          target = { index: output.length, call: { id: d.id, name: d.name, arguments: "" }, n: callCount++ };
          calls.set(d.index, target);
          open = { kind: "call", ...target };
          const item = callItem(meta, target.n, target.call, "in_progress");
          output.push(item);
          frames += event("response.output_item.added", { output_index: target.index, item });
        }
        if (d.arguments === "") return frames;
        target.call.arguments += d.arguments;
        return frames + event("response.function_call_arguments.delta", { item_id: callItemId(meta, target.n), output_index: target.index, delta: d.arguments });
      },
      end(finishReason, usage) {
        const frames = close();
        const response = responseObject(request, meta, { finishReason, output, usage });
        return frames + event(response.status === "incomplete" ? "response.incomplete" : "response.completed", { response });
      },
      // The error event, then the response failed (what the official clients' stream helpers end on), with what came before.
      failure: (e) =>
        event("error", { code: e.code, message: e.message, param: null }) +
        event("response.failed", { response: { ...responseObject(request, meta, null), status: "failed", error: { code: "server_error", message: e.message }, output } }),
    };
  },
  // A refusal after the body was checked (the plan's, the runtime's) names the chat form's parameters: told in this API's.
  sendError,
};
