import { describe, expect, it } from "vitest";
import { MakinaError } from "../../proto/index.js";
import { decodeChatRequest } from "../../relay/http/openai/index.js";

const ok = { model: "m", messages: [{ role: "user", content: "hi" }] };

function rejects(body: unknown): { code: string; param: string | null; message: string } {
  try {
    decodeChatRequest(body);
  } catch (err) {
    expect(err).toBeInstanceOf(MakinaError);
    const e = err as MakinaError;
    return { code: e.mapping.openaiCode, param: e.param, message: e.message };
  }
  throw new Error("expected the request to be rejected");
}

describe("chat request validation", () => {
  it("applies the vendor defaults", () => {
    const { paramName, ...request } = decodeChatRequest(ok);
    // This API's names are the domain's.
    expect(["max_tokens", "messages", "response_format"].map(paramName)).toEqual(["max_tokens", "messages", "response_format"]);
    expect(request).toEqual({
      model: "m",
      includeUsage: false,
      imagePart: undefined,
      needs: [],
      input: {
        messages: [{ role: "user", content: "hi" }],
        stream: false,
        temperature: 1,
        topP: 1,
        maxTokens: 0,
        stop: [],
        seed: undefined,
        presencePenalty: 0,
        frequencyPenalty: 0,
        unset: ["temperature", "top_p"],
      },
    });
    expect(decodeChatRequest({ ...ok, temperature: 0.5 }).input.unset).toEqual(["top_p"]);
  });

  it("accepts text content parts, every role, a stop string and max_completion_tokens", () => {
    const r = decodeChatRequest({
      model: "m",
      messages: [
        { role: "developer", content: "be brief" },
        { role: "user", content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] },
        { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "answer", arguments: "{}" } }] },
        { role: "tool", content: "42", tool_call_id: "call_1" },
      ],
      stop: "\n",
      max_completion_tokens: 7,
    });
    expect(r.input.messages.map((m) => m.content)).toEqual(["be brief", "ab", "", "42"]);
    expect(r.input.stop).toEqual(["\n"]);
    expect(r.input.maxTokens).toBe(7);
  });

  it.each([
    [{ messages: ok.messages }, "missing_required_parameter", "model"],
    [{ model: "m" }, "missing_required_parameter", "messages"],
    [{ model: "m", messages: [] }, "invalid_value", "messages"],
    [{ model: 3, messages: ok.messages }, "invalid_value", "model"],
    [{ ...ok, messages: [{ role: "wizard", content: "x" }] }, "invalid_value", "messages[0].role"],
    [{ ...ok, temperature: 2.5 }, "invalid_value", "temperature"],
    [{ ...ok, temperature: "hot" }, "invalid_value", "temperature"],
    [{ ...ok, top_p: 1.5 }, "invalid_value", "top_p"],
    [{ ...ok, max_tokens: 0 }, "invalid_value", "max_tokens"],
    [{ ...ok, max_tokens: 1.5 }, "invalid_value", "max_tokens"],
    [{ ...ok, stop: ["a", "b", "c", "d", "e"] }, "invalid_value", "stop"],
    [{ ...ok, stream: "yes" }, "invalid_value", "stream"],
    [{ ...ok, stream_options: { include_usage: true } }, "invalid_value", "stream_options"],
    [{ ...ok, n: 0 }, "invalid_value", "n"],
    [{ ...ok, presence_penalty: 2.5 }, "invalid_value", "presence_penalty"],
    [{ ...ok, frequency_penalty: -3 }, "invalid_value", "frequency_penalty"],
    [{ ...ok, logprobs: "yes" }, "invalid_value", "logprobs"],
    [{ ...ok, top_logprobs: 3 }, "invalid_value", "top_logprobs"],
    [{ ...ok, logit_bias: { "12": 101 } }, "invalid_value", "logit_bias.12"],
    [{ ...ok, response_format: { type: "yaml" } }, "invalid_value", "response_format.type"],
    [{ ...ok, tools: "all" }, "invalid_value", "tools"],
    [{ ...ok, user: 5 }, "invalid_value", "user"],
    [{ ...ok, seed: -1 }, "invalid_value", "seed"],
    [{ ...ok, stream: true, stream_options: { include_usage: "yes" } }, "invalid_value", "stream_options.include_usage"],
    [{ ...ok, stream: true, stream_options: { colour: true } }, "unknown_parameter", "stream_options.colour"],
    [{ ...ok, messages: [{ role: "tool", content: "x" }] }, "missing_required_parameter", "messages[0].tool_call_id"],
    [{ ...ok, messages: [{ role: "user" }] }, "missing_required_parameter", "messages[0].content"],
    [{ ...ok, messages: [{ content: "x" }] }, "missing_required_parameter", "messages[0].role"],
    [{ ...ok, messages: [{ role: "user", content: [] }] }, "invalid_value", "messages[0].content"],
    [{ ...ok, messages: [{ role: "user", content: [{ type: "text" }] }] }, "invalid_value", "messages[0].content[0].text"],
    [{ ...ok, messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "x" } }] }] }, "invalid_value", "messages[0].content[0].image_url.url"],
    [{ ...ok, messages: [{ role: "user", content: [{ type: "image_url" }] }] }, "missing_required_parameter", "messages[0].content[0].image_url"],
    [{ ...ok, messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://x.test/a.png", detail: "max" } }] }] }, "invalid_value", "messages[0].content[0].image_url.detail"],
    [{ ...ok, messages: [{ role: "system", content: [{ type: "image_url", image_url: { url: "https://x.test/a.png" } }] }] }, "invalid_value", "messages[0].content[0].type"],
    [{ ...ok, messages: [{ role: "user", content: [{ type: "input_audio", input_audio: {} }] }] }, "unsupported_parameter", "messages[0].content[0].type"],
  ])("rejects %j with %s on %s", (body, code, param) => {
    expect(rejects(body)).toMatchObject({ code, param });
  });

  it("accepts every documented parameter in its neutral form without needing anything of the runtime", () => {
    const r = decodeChatRequest({
      ...ok,
      n: 1,
      presence_penalty: 0,
      frequency_penalty: 0,
      logprobs: false,
      logit_bias: {},
      response_format: { type: "text" },
      tools: [],
      tool_choice: "auto",
      parallel_tool_calls: true,
      store: false,
      metadata: { team: "a" },
      service_tier: "auto",
      user: "u-1",
      seed: 7,
      prompt_cache_key: "k",
    });
    expect(r.needs).toEqual([]);
    expect(r.input.seed).toBe(7);
  });

  it("lists the parameters whose values the runtime must honour", () => {
    const r = decodeChatRequest({ ...ok, n: 2, presence_penalty: 0.5, tools: [{ type: "function", function: { name: "f" } }], logprobs: true, top_logprobs: 2 });
    expect(r.needs.sort()).toEqual(["logprobs", "n", "presence_penalty", "tools", "top_logprobs"]);
    expect(r.input.presencePenalty).toBe(0.5);
  });

  it("reads tools, tool_choice and parallel_tool_calls, and the calls and results of a conversation", () => {
    const weather = { type: "function", function: { name: "get_weather", description: "Weather", parameters: { type: "object", properties: { city: { type: "string" } } }, strict: true } };
    const r = decodeChatRequest({
      ...ok,
      messages: [
        { role: "user", content: "Paris?" },
        { role: "assistant", content: null, tool_calls: [{ id: "call_a", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
        { role: "tool", tool_call_id: "call_a", content: [{ type: "text", text: "sunny" }] },
      ],
      tools: [weather, { type: "function", function: { name: "noop" } }],
      tool_choice: { type: "function", function: { name: "noop" } },
      parallel_tool_calls: false,
    });
    expect(r.input).toMatchObject({
      tools: [
        { name: "get_weather", description: "Weather", parametersJson: '{"type":"object","properties":{"city":{"type":"string"}}}', strict: true },
        { name: "noop", description: "", parametersJson: "", strict: false },
      ],
      toolChoice: "function",
      toolChoiceFunction: "noop",
      parallelToolCalls: false,
    });
    expect(r.input.messages).toEqual([
      { role: "user", content: "Paris?" },
      { role: "assistant", content: "", toolCalls: [{ id: "call_a", name: "get_weather", arguments: '{"city":"Paris"}' }] },
      { role: "tool", content: "sunny", toolCallId: "call_a" },
    ]);
    expect(r.needs.sort()).toEqual(["tool_choice", "tools"]);
    expect(decodeChatRequest({ ...ok, tools: [weather], tool_choice: "required" }).input).toMatchObject({ toolChoice: "required", toolChoiceFunction: "", parallelToolCalls: undefined });
  });

  it("keeps a user message's image parts in order, with its text, and needs a runtime that takes images", () => {
    const r = decodeChatRequest({
      ...ok,
      messages: [
        { role: "user", content: "hi" },
        { role: "user", content: [{ type: "text", text: "What is this?" }, { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=", detail: "low" } }] },
      ],
    });
    expect(r.input.messages[1]).toEqual({
      role: "user",
      content: "What is this?",
      parts: [
        { type: "text", text: "What is this?", imageUrl: "", detail: "" },
        { type: "image_url", text: "", imageUrl: "data:image/png;base64,iVBORw0KGgo=", detail: "low" },
      ],
    });
    expect(r.input.messages[0]).toEqual({ role: "user", content: "hi" });
    expect([r.needs, r.imagePart]).toEqual([["image_url"], "messages[1].content[1].type"]);
  });

  const tool = (fn: Record<string, unknown>) => ({ type: "function", function: fn });
  const called = { role: "assistant", content: null, tool_calls: [{ id: "call_a", type: "function", function: { name: "f", arguments: "{}" } }] };
  it.each([
    [{ ...ok, tools: [{ type: "retrieval" }] }, "invalid_value", "tools[0].type"],
    [{ ...ok, tools: [{ type: "function" }] }, "missing_required_parameter", "tools[0].function"],
    [{ ...ok, tools: [tool({ description: "x" })] }, "missing_required_parameter", "tools[0].function.name"],
    [{ ...ok, tools: [tool({ name: "has space" })] }, "invalid_value", "tools[0].function.name"],
    [{ ...ok, tools: [tool({ name: "f", parameters: "{}" })] }, "invalid_value", "tools[0].function.parameters"],
    [{ ...ok, tools: [tool({ name: "f", parameters: { type: "string" } })] }, "invalid_value", "tools[0].function.parameters"],
    [{ ...ok, tools: [tool({ name: "f", strict: "yes" })] }, "invalid_value", "tools[0].function.strict"],
    [{ ...ok, tools: [tool({ name: "f", colour: 1 })] }, "unknown_parameter", "tools[0].function.colour"],
    [{ ...ok, tools: [tool({ name: "f" }), tool({ name: "f" })] }, "invalid_value", "tools[1].function.name"],
    [{ ...ok, tools: Array.from({ length: 129 }, (_, i) => tool({ name: `f${i}` })) }, "invalid_value", "tools"],
    [{ ...ok, tool_choice: "required" }, "invalid_value", "tool_choice"],
    [{ ...ok, tools: [tool({ name: "f" })], tool_choice: { type: "function", function: { name: "g" } } }, "invalid_value", "tool_choice.function.name"],
    [{ ...ok, tools: [tool({ name: "f" })], tool_choice: { type: "function" } }, "missing_required_parameter", "tool_choice.function"],
    [{ ...ok, tools: [tool({ name: "f" })], parallel_tool_calls: "yes" }, "invalid_value", "parallel_tool_calls"],
    [{ ...ok, messages: [{ role: "tool", tool_call_id: "call_x", content: "1" }] }, "invalid_value", "messages[0].tool_call_id"],
    [{ ...ok, messages: [called, { role: "user", content: "and?" }] }, "invalid_value", "messages[1]"],
    [{ ...ok, messages: [{ ...called, tool_calls: [{ id: "call_a", type: "function", function: { name: "f", arguments: "{oops" } }] }] }, "invalid_value", "messages[0].tool_calls[0].function.arguments"],
    [{ ...ok, messages: [{ ...called, tool_calls: [{ type: "function", function: { name: "f", arguments: "{}" } }] }] }, "missing_required_parameter", "messages[0].tool_calls[0].id"],
    [{ ...ok, messages: [{ ...called, tool_calls: "f()" }] }, "invalid_value", "messages[0].tool_calls"],
  ])("rejects the tools of %j with %s on %s", (body, code, param) => {
    expect(rejects(body)).toMatchObject({ code, param });
  });

  it("names an unknown parameter the way the vendor does", () => {
    expect(rejects({ ...ok, frobnicate: true })).toEqual({ code: "unknown_parameter", param: "frobnicate", message: "Unrecognized request argument supplied: frobnicate" });
  });

  it("rejects a body that is not an object", () => {
    expect(rejects([1, 2]).code).toBe("invalid_value");
    expect(rejects(null).code).toBe("invalid_value");
  });
});
