import { describe, expect, it } from "vitest";
import { anthropicError, ERROR_TABLE, MakinaError } from "../../proto/index.js";
import { decodeMessagesRequest, messagesCodec } from "../../relay/http/anthropic/index.js";
import { chatCompletionsCodec, decodeResponsesRequest, responsesCodec } from "../../relay/http/openai/index.js";
import type { StreamEncoder } from "../../relay/http/gateway/index.js";

const meta = { id: "resp_0123456789abcdefghij0123456789abcdefghij", created: 1_795_000_000, model: "m", serviceTier: "flex" as const };

/** The events an encoder writes for a text, two tool calls (the second's pieces split) and the end, parsed. */
function run(encoder: StreamEncoder): { event: string | undefined; data: Record<string, unknown> }[] {
  const text =
    encoder.open() +
    encoder.text("Let me ") +
    encoder.text("") +
    encoder.text("check.") +
    encoder.toolCall({ index: 0, id: "call_a", name: "get_weather", arguments: '{"city":"Paris"}' }) +
    encoder.toolCall({ index: 1, id: "call_b", name: "get_time", arguments: "" }) +
    encoder.toolCall({ index: 1, id: "", name: "", arguments: '{"zone":' }) +
    encoder.toolCall({ index: 1, id: "", name: "", arguments: '"UTC"}' }) +
    encoder.end("tool_calls", { promptTokens: 7, completionTokens: 11 });
  return text
    .split("\n\n")
    .filter(Boolean)
    .map((frame) => {
      const event = /^event: (.*)$/m.exec(frame)?.[1];
      const data = JSON.parse(/^data: (.*)$/m.exec(frame)![1]!) as Record<string, unknown>;
      return { event, data };
    });
}

describe("the Messages API's stream encoder", () => {
  const request = decodeMessagesRequest({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "hi" }] });

  it("opens a block for the text and one per tool call, in order, each closed before the next, and ends with the reason and usage", () => {
    const events = run(messagesCodec.streamEncoder(request, { ...meta, id: "msg_x" }));
    expect(events.every((e) => e.event === e.data.type)).toBe(true);
    expect(events.map((e) => [e.data.type, e.data.index ?? null])).toEqual([
      ["message_start", null],
      ["content_block_start", 0],
      ["content_block_delta", 0],
      ["content_block_delta", 0],
      ["content_block_stop", 0],
      ["content_block_start", 1],
      ["content_block_delta", 1],
      ["content_block_stop", 1],
      ["content_block_start", 2],
      ["content_block_delta", 2],
      ["content_block_delta", 2],
      ["content_block_stop", 2],
      ["message_delta", null],
      ["message_stop", null],
    ]);
    expect(events[5]!.data.content_block).toEqual({ type: "tool_use", id: "call_a", name: "get_weather", input: {} });
    expect(events.slice(9, 11).map((e) => (e.data.delta as { partial_json: string }).partial_json).join("")).toBe('{"zone":"UTC"}');
    expect(events[12]!.data).toEqual({ type: "message_delta", delta: { stop_reason: "tool_use", stop_sequence: null }, usage: { input_tokens: 7, output_tokens: 11, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 } });
    // The tier that serves it, in the API's words: flex is its `batch`.
    expect((events[0]!.data.message as { usage: unknown }).usage).toEqual({ input_tokens: 0, output_tokens: 0, service_tier: "batch" });
  });

  it("tells a broken stream as an error event in Anthropic's envelope", () => {
    const frame = messagesCodec.streamEncoder(request, meta).failure(new MakinaError("stream_incomplete", "The stream ended before completion: gone."));
    expect(frame).toBe(`event: error\ndata: {"type":"error","error":{"type":"api_error","message":"The stream ended before completion: gone."}}\n\n`);
  });
});

describe("the Responses API's stream encoder", () => {
  const request = decodeResponsesRequest({ model: "m", input: "hi", tools: [{ type: "function", name: "get_weather", parameters: { type: "object", properties: {} } }] });

  it("numbers its events from 0, adds and finishes an item for the text and each call, and completes with the whole output", () => {
    const events = run(responsesCodec.streamEncoder(request, meta));
    expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events.map((e) => [e.data.type, e.data.output_index ?? null])).toEqual([
      ["response.created", null],
      ["response.in_progress", null],
      ["response.output_item.added", 0],
      ["response.content_part.added", 0],
      ["response.output_text.delta", 0],
      ["response.output_text.delta", 0],
      ["response.output_text.done", 0],
      ["response.content_part.done", 0],
      ["response.output_item.done", 0],
      ["response.output_item.added", 1],
      ["response.function_call_arguments.delta", 1],
      ["response.function_call_arguments.done", 1],
      ["response.output_item.done", 1],
      ["response.output_item.added", 2],
      ["response.function_call_arguments.delta", 2],
      ["response.function_call_arguments.delta", 2],
      ["response.function_call_arguments.done", 2],
      ["response.output_item.done", 2],
      ["response.completed", null],
    ]);
    const response = events.at(-1)!.data.response as { status: string; output: unknown[]; usage: unknown; tools: unknown[] };
    expect(response.status).toBe("completed");
    expect(response.output).toEqual([
      { id: "msg_0123456789abcdefghij0123456789abcdefghij", type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: "Let me check.", annotations: [], logprobs: [] }] },
      { id: "fc_0123456789abcdefghij0123456789abcdefghij_0", type: "function_call", status: "completed", call_id: "call_a", name: "get_weather", arguments: '{"city":"Paris"}' },
      { id: "fc_0123456789abcdefghij0123456789abcdefghij_1", type: "function_call", status: "completed", call_id: "call_b", name: "get_time", arguments: '{"zone":"UTC"}' },
    ]);
    expect(response.usage).toMatchObject({ input_tokens: 7, output_tokens: 11, total_tokens: 18 });
    expect(response.tools).toHaveLength(1);
  });

  it("tells a broken stream as an error event with its code, then the response failed with what came before", () => {
    const encoder = responsesCodec.streamEncoder(request, meta);
    const frames = encoder.open() + encoder.text("Half an ans") + encoder.failure(new MakinaError("stream_incomplete", "gone"));
    const events = frames
      .split("\n\n")
      .filter(Boolean)
      .map((f) => JSON.parse(/^data: (.*)$/m.exec(f)![1]!) as Record<string, unknown>);
    expect(events.at(-2)).toEqual({ type: "error", code: "stream_incomplete", message: "gone", param: null, sequence_number: events.length - 2 });
    expect(events.at(-1)).toMatchObject({ type: "response.failed", response: { status: "failed", error: { code: "server_error", message: "gone" }, output: [{ type: "message", status: "in_progress" }] } });
  });

  it("gives a message item after a function call an id of its own", () => {
    const encoder = responsesCodec.streamEncoder(request, meta);
    encoder.open();
    encoder.text("First.");
    encoder.toolCall({ index: 0, id: "call_a", name: "get_weather", arguments: "{}" });
    encoder.text("Then.");
    const done = encoder.end("stop", { promptTokens: 1, completionTokens: 3 });
    const response = (JSON.parse(/^data: (.*)$/m.exec(done.split("\n\n").filter(Boolean).at(-1)!)![1]!) as { response: { output: { id: string }[] } }).response;
    const ids = response.output.map((item) => item.id);
    expect(new Set(ids).size).toBe(3);
    expect(ids[2]).toMatch(/^msg_.*_1$/);
  });
});

describe("the chat-completions stream encoder", () => {
  it("ends with the finish reason, the usage when asked, and [DONE]; a broken stream with an error and no [DONE]", () => {
    const request = chatCompletionsCodec.decode({ model: "m", messages: [{ role: "user", content: "hi" }], stream: true, stream_options: { include_usage: true } });
    const encoder = chatCompletionsCodec.streamEncoder(request, { ...meta, id: "chatcmpl-x" });
    const end = encoder.end("stop", { promptTokens: 1, completionTokens: 2 });
    // Every chunk says the tier that serves it.
    expect(JSON.parse(encoder.open().slice(6))).toMatchObject({ object: "chat.completion.chunk", service_tier: "flex" });
    expect(end.split("\n\n").filter(Boolean).map((f) => f.slice(6))).toEqual([
      expect.stringContaining('"finish_reason":"stop"'),
      expect.stringContaining('"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"prompt_tokens_details":{"cached_tokens":0}}'),
      "[DONE]",
    ]);
    expect(encoder.failure(new MakinaError("stream_incomplete", "gone"))).not.toContain("[DONE]");
  });
});

describe("the Responses API's input items", () => {
  it("joins the function calls of one answer into one assistant turn, so parallel calls and their outputs go back", () => {
    const request = decodeResponsesRequest({
      model: "m",
      input: [
        { role: "user", content: "Weather and time in Paris?" },
        { type: "function_call", call_id: "call_a", name: "get_weather", arguments: "{}" },
        { type: "function_call", call_id: "call_b", name: "get_time", arguments: "{}" },
        { type: "function_call_output", call_id: "call_a", output: "sunny" },
        { type: "function_call_output", call_id: "call_b", output: "noon" },
      ],
    });
    expect(request.input.messages.map((m) => [m.role, m.toolCalls?.map((c) => c.id) ?? m.toolCallId ?? null])).toEqual([
      ["user", null],
      ["assistant", ["call_a", "call_b"]],
      ["tool", "call_a"],
      ["tool", "call_b"],
    ]);
  });
});

describe("refusals said in the terms of the body sent", () => {
  it("names the Messages API's parameters: a tool's input_schema, stop_sequences, a message's place", () => {
    const base = { model: "m", max_tokens: 5, messages: [{ role: "user", content: "hi" }] };
    const refusal = (body: Record<string, unknown>) => {
      try {
        decodeMessagesRequest(body);
      } catch (err) {
        return err as MakinaError;
      }
      throw new Error("not refused");
    };
    expect(refusal({ ...base, tools: [{ name: "f", input_schema: { type: "object", properties: { a: { type: "nonsense" } } } }] }).param).toBe("tools[0].input_schema.properties.a.type");
    const stops = refusal({ ...base, stop_sequences: ["a", "b", "c", "d", "e"] });
    expect(stops).toMatchObject({ param: "stop_sequences", message: expect.stringContaining("'stop_sequences'") });
    expect(stops.message).not.toContain("stop_sequences sequences");
    expect(refusal({ ...base, messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "x" }] }] })).toMatchObject({ param: "messages[0].content[0].tool_use_id", message: expect.stringContaining("'messages[0].content[0].tool_use_id'") });
    // A call left unanswered is named where the conversation went on without its result.
    const unanswered = [{ role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "f", input: {} }] }, { role: "user", content: "and?" }];
    expect(refusal({ ...base, messages: unanswered }).param).toBe("messages[1]");
    expect(refusal({ ...base, messages: [{ role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "has space", input: {} }] }] }).param).toBe("messages[0].content[0].name");
    expect(refusal({ ...base, messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "not base64!" } }] }] }).param).toBe("messages[0].content[0].source.data");
    expect(refusal({ ...base, tools: [{ name: "f", input_schema: {} }], tool_choice: { type: "tool", name: "g" } }).param).toBe("tool_choice.name");
    expect(refusal({ ...base, tool_choice: { type: "auto", disable_parallel_tool_use: "yes" } }).param).toBe("tool_choice.disable_parallel_tool_use");
    expect(refusal({ ...base, max_tokens: 0 }).param).toBe("max_tokens");
    expect(refusal({ ...base, top_k: 5 })).toMatchObject({ code: "unsupported_parameter", param: "top_k" });
  });

  it("names the Responses API's parameters: max_output_tokens, text.format, an input item's place", () => {
    const base = { model: "m", input: "hi" };
    const refusal = (body: Record<string, unknown>) => {
      try {
        decodeResponsesRequest(body);
      } catch (err) {
        return err as MakinaError;
      }
      throw new Error("not refused");
    };
    expect(refusal({ ...base, max_output_tokens: 0 })).toMatchObject({ param: "max_output_tokens", message: expect.stringContaining("'max_output_tokens'") });
    expect(refusal({ ...base, text: { format: { type: "json_schema", name: "o", schema: { type: "object", properties: { a: { type: "nonsense" } } } } } }).param).toBe("text.format.schema.properties.a.type");
    expect(refusal({ ...base, input: [{ role: "user", content: "hi" }, { type: "function_call_output", call_id: "call_1", output: "x" }] }).param).toBe("input[1].call_id");
    expect(refusal({ ...base, input: [{ type: "function_call", call_id: "call_1", name: "f", arguments: "{oops" }] }).param).toBe("input[0].arguments");
    expect(refusal({ ...base, input: [{ type: "reasoning" }] })).toMatchObject({ param: "input", message: expect.stringContaining("'input'") });
    expect(refusal({ ...base, text: { format: { type: "json_schema", schema: {} } } }).param).toBe("text.format.name");
    expect(refusal({ ...base, tools: [{ type: "function", name: "f", parameters: { type: "string" } }] }).param).toBe("tools[0].parameters");
  });
});

describe("refusals that come after the body was checked", () => {
  it("name the client's field: each request knows its API's name of what the plan and the runtime refuse", () => {
    const image = { type: "image", source: { type: "url", url: "https://x.test/a.png" } };
    const messages = decodeMessagesRequest({
      model: "m",
      max_tokens: 5,
      messages: [{ role: "user", content: [{ type: "text", text: "look" }, image] }],
      output_config: { format: { type: "json_schema", schema: { type: "object" } } },
      tools: [{ name: "f", input_schema: {} }],
      tool_choice: { type: "any" },
    });
    // A place inside a schema, where a runtime cannot enforce a keyword, is named inside the client's field.
    expect(messages.paramName("tools[0].function.parameters.properties.a.minimum")).toBe("tools[0].input_schema.properties.a.minimum");
    expect(messages.paramName("response_format.json_schema.schema.properties.code.pattern")).toBe("output_config.format.schema.properties.code.pattern");
    expect(messages.paramName("tools[0].function.parameters")).toBe("tools[0].input_schema");
    expect(messages.paramName("tools[0].function.parametersX")).toBe("tools[0].function.parametersX");
    expect(["response_format", "response_format.type", "messages", "max_tokens", "tools", "tool_choice", "image_url", "model"].map(messages.paramName)).toEqual([
      "output_config.format",
      "output_config.format.type",
      "messages",
      "max_tokens",
      "tools",
      "tool_choice",
      "messages[0].content[1].type",
      "model",
    ]);
    const responses = decodeResponsesRequest({ model: "m", input: "hi", max_output_tokens: 9, text: { format: { type: "json_object" }, verbosity: "low" } });
    expect(["max_tokens", "messages", "response_format", "verbosity", "model"].map(responses.paramName)).toEqual(["max_output_tokens", "input", "text.format", "text.verbosity", "model"]);
    expect(responses.needs).toEqual(["response_format", "verbosity"]);
  });
});

describe("the Anthropic column of the error table", () => {
  it("gives every code an Anthropic error type, and 529 overloaded_error where a machine or runtime cannot take the request", () => {
    for (const mapping of Object.values(ERROR_TABLE)) expect(anthropicError(mapping).type).toMatch(/^(invalid_request_error|authentication_error|permission_error|not_found_error|request_too_large|rate_limit_error|api_error|overloaded_error|timeout_error)$/);
    expect(anthropicError(ERROR_TABLE.machine_offline)).toEqual({ status: 529, type: "overloaded_error" });
    expect(anthropicError(ERROR_TABLE.model_not_found)).toEqual({ status: 404, type: "not_found_error" });
    expect(anthropicError(ERROR_TABLE.request_too_large)).toEqual({ status: 413, type: "request_too_large" });
  });
});

describe("what a prompt reused, in each API's words", () => {
  const usage = { promptTokens: 10, completionTokens: 2, cachedTokens: 6 };
  const answer = { text: "hi", calls: [], vectors: [], scores: [], finishReason: "stop" as const, usage };
  it("says the cached tokens: chat's prompt_tokens_details, Responses' input_tokens_details, Messages' cache reads apart from input_tokens", () => {
    const chat = chatCompletionsCodec.answer(chatCompletionsCodec.decode({ model: "m", messages: [{ role: "user", content: "hi" }] }), meta, answer) as { usage: unknown };
    expect(chat.usage).toEqual({ prompt_tokens: 10, completion_tokens: 2, total_tokens: 12, prompt_tokens_details: { cached_tokens: 6 } });
    const responses = responsesCodec.answer(decodeResponsesRequest({ model: "m", input: "hi" }), meta, answer) as { usage: { input_tokens: number; input_tokens_details: unknown } };
    expect([responses.usage.input_tokens, responses.usage.input_tokens_details]).toEqual([10, { cached_tokens: 6 }]);
    const message = messagesCodec.answer(decodeMessagesRequest({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }), meta, answer) as { usage: unknown };
    expect(message.usage).toEqual({ input_tokens: 4, output_tokens: 2, cache_read_input_tokens: 6, cache_creation_input_tokens: 0, service_tier: "batch" });
  });
});
