import OpenAI from "openai";
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { schemaProblems } from "../helpers/json-schema-check.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";

/**
 * Function schemas of the kinds agent frameworks send: flat, nested objects, enums, arrays, nullable,
 * alternatives, definitions. Strings are bounded: the test models (a tiny story model, and random weights)
 * would otherwise write one string to the token limit.
 */
const FUNCTIONS: Record<string, Record<string, unknown>> = {
  get_weather: {
    type: "object",
    properties: { city: { type: "string", maxLength: 16 }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
    required: ["city", "unit"],
    additionalProperties: false,
  },
  book_trip: {
    type: "object",
    properties: {
      traveller: { type: "object", properties: { name: { type: "string", maxLength: 12 }, vip: { type: "boolean" } }, required: ["name", "vip"] },
      legs: { type: "array", items: { type: "object", properties: { to: { type: "string", maxLength: 8 }, seat: { enum: ["window", "aisle"] } }, required: ["to", "seat"] }, minItems: 1, maxItems: 2 },
    },
    required: ["traveller", "legs"],
  },
  tag_items: {
    type: "object",
    properties: { tags: { type: "array", items: { type: "string", enum: ["red", "green", "blue"] }, maxItems: 3 }, urgent: { type: "boolean" } },
    required: ["tags", "urgent"],
  },
  set_nickname: {
    type: "object",
    properties: { nickname: { type: ["string", "null"], maxLength: 10 }, level: { anyOf: [{ enum: ["low", "high"] }, { type: "null" }] } },
    required: ["nickname", "level"],
  },
  plan: {
    type: "object",
    $defs: { step: { type: "object", properties: { action: { enum: ["go", "stop", "wait"] }, fast: { type: "boolean" } }, required: ["action", "fast"] } },
    properties: { steps: { type: "array", items: { $ref: "#/$defs/step" }, minItems: 1, maxItems: 3 } },
    required: ["steps"],
  },
};

const tools: ChatCompletionTool[] = Object.entries(FUNCTIONS).map(([name, parameters]) => ({ type: "function", function: { name, description: `The ${name.replace("_", " ")} function.`, parameters } }));

describe("tool calling on the GGUF runtime with the tools harness", () => {
  let gw: TestGateway;
  let client: OpenAI;
  const model = "tools-model";
  beforeAll(async () => {
    // The tools are described to the model in its prompt: the test model's whole trained context is needed.
    gw = await startTestGateway({ agentFlags: { maxContextSize: 2048 } });
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
    await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: model, layers: { harness: "tools" } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("calls the named function with arguments that parse and follow its schema, for every schema", async () => {
    for (const [name, schema] of Object.entries(FUNCTIONS)) {
      const res = await client.chat.completions.create({
        model,
        messages: [{ role: "user", content: `Please use ${name}.` }],
        tools,
        tool_choice: { type: "function", function: { name } },
        max_tokens: 200,
        temperature: 0,
      });
      const choice = res.choices[0]!;
      expect([name, choice.finish_reason]).toEqual([name, "tool_calls"]);
      const calls = choice.message.tool_calls!;
      expect(calls.length).toBeGreaterThanOrEqual(1);
      for (const call of calls) {
        expect(call.type).toBe("function");
        expect(call.id).toMatch(/^call_[A-Za-z0-9]{24}$/);
        if (call.type !== "function") continue;
        expect(call.function.name).toBe(name);
        expect([name, schemaProblems(schema, JSON.parse(call.function.arguments))]).toEqual([name, []]);
      }
    }
  });

  it("obeys tool_choice required: the answer is a call of one of the tools", async () => {
    const res = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Do something." }], tools, tool_choice: "required", max_tokens: 200, temperature: 0, parallel_tool_calls: false });
    const choice = res.choices[0]!;
    expect(choice.finish_reason).toBe("tool_calls");
    expect(choice.message.tool_calls).toHaveLength(1);
    const call = choice.message.tool_calls![0]!;
    if (call.type !== "function") throw new Error("not a function call");
    expect(Object.keys(FUNCTIONS)).toContain(call.function.name);
    expect(schemaProblems(FUNCTIONS[call.function.name]!, JSON.parse(call.function.arguments))).toEqual([]);
    expect(res.usage!.completion_tokens).toBeGreaterThan(0);
  });

  it("streams tool-call deltas, each with its index, that join to the calls of the non-streamed answer", async () => {
    const request = { model, messages: [{ role: "user" as const, content: "Book me a trip." }], tools, tool_choice: { type: "function" as const, function: { name: "book_trip" } }, max_tokens: 200, temperature: 0, seed: 7 };
    const whole = await client.chat.completions.create(request);
    const stream = await client.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
    const joined: { id: string; name: string; arguments: string }[] = [];
    let finish: string | null = null;
    let deltas = 0;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (!choice) continue;
      for (const d of choice.delta.tool_calls ?? []) {
        deltas++;
        expect(typeof d.index).toBe("number");
        const call = (joined[d.index] ??= { id: "", name: "", arguments: "" });
        if (d.id) call.id = d.id;
        if (d.function?.name) call.name = d.function.name;
        call.arguments += d.function?.arguments ?? "";
      }
      finish = choice.finish_reason ?? finish;
    }
    expect(finish).toBe("tool_calls");
    expect(deltas).toBeGreaterThan(1);
    const expected = whole.choices[0]!.message.tool_calls!.map((c) => (c.type === "function" ? { name: c.function.name, arguments: c.function.arguments } : undefined));
    expect(joined.map(({ name, arguments: args }) => ({ name, arguments: args }))).toEqual(expected);
    for (const c of joined) expect(c.id).toMatch(/^call_/);
  });

  it("answers in text with tool_choice none, and refuses what it cannot hold to, with the reason", async () => {
    const none = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Once upon a time" }], tools, tool_choice: "none", max_tokens: 8, temperature: 0 });
    expect(none.choices[0]).toMatchObject({ finish_reason: "length", message: { role: "assistant" } });
    expect(none.choices[0]!.message.tool_calls).toBeUndefined();
    expect(none.choices[0]!.message.content!.length).toBeGreaterThan(0);
    // A keyword no grammar enforces is refused, naming the tool, rather than ignored.
    const patterned: ChatCompletionTool = { type: "function", function: { name: "lookup", parameters: { type: "object", properties: { code: { type: "string", pattern: "^[A-Z]{3}$" } } } } };
    await expect(client.chat.completions.create({ model, messages: [{ role: "user", content: "Look it up." }], tools: [tools[0]!, patterned], tool_choice: "required" })).rejects.toMatchObject({
      status: 400,
      code: "invalid_value",
      param: "tools[1].function.parameters.properties.code.pattern",
      message: expect.stringContaining("'pattern' cannot be enforced"),
    });
    // The grammar holds the answer to a format or to a call, not both at once.
    await expect(
      client.chat.completions.create({ model, messages: [{ role: "user", content: "Hi" }], tools, response_format: { type: "json_object" } }),
    ).rejects.toMatchObject({ status: 400, code: "unsupported_parameter", param: "response_format" });
    // A GGUF stack without the tools harness does not take tools: refused with the way to get them.
    await expect(client.chat.completions.create({ model: gw.modelId, messages: [{ role: "user", content: "Hi" }], tools })).rejects.toMatchObject({
      status: 400,
      code: "unsupported_parameter",
      param: "tools",
      message: expect.stringContaining("with the 'tools' harness"),
    });
  });

  it("takes the tool's result back in the next turn and answers in text (a full round trip)", async () => {
    const messages: ChatCompletionMessageParam[] = [{ role: "user", content: "What is the weather in Paris?" }];
    const first = await client.chat.completions.create({ model, messages, tools, tool_choice: { type: "function", function: { name: "get_weather" } }, max_tokens: 100, temperature: 0 });
    const assistant = first.choices[0]!.message;
    expect(assistant.tool_calls).toHaveLength(1);
    messages.push(assistant);
    const answer = (result: string) =>
      client.chat.completions.create({ model, messages: [...messages, { role: "tool", tool_call_id: assistant.tool_calls![0]!.id, content: result }], tools, tool_choice: "none", max_tokens: 12, temperature: 0 });
    const second = await answer(JSON.stringify({ temperature: 21 }));
    const choice = second.choices[0]!;
    expect(choice.message.tool_calls).toBeUndefined();
    expect(choice.message.content!.length).toBeGreaterThan(0);
    // The tool's result is in the prompt the model read: a longer result, a longer prompt.
    const longer = await answer(JSON.stringify({ temperature: 21, sky: "clear", wind: "light breeze from the west" }));
    expect(longer.usage!.prompt_tokens).toBeGreaterThan(second.usage!.prompt_tokens + 10);
  });
});
