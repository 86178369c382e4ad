import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { schemaProblems } from "../helpers/json-schema-check.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";

const WEATHER = {
  type: "object" as const,
  properties: { city: { type: "string", maxLength: 12 }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
  required: ["city", "unit"],
  additionalProperties: false,
};

/** Sampling the Messages API of this client version no longer names, sent as older clients send it. */
const greedy = { temperature: 0 } as Record<string, unknown>;

describe("the Anthropic Messages API with Anthropic's own client, on GGUF stacks", () => {
  let gw: TestGateway;
  let client: Anthropic;
  const tools = "tools-model";
  beforeAll(async () => {
    // The tools are described to the model in its prompt: the test model's whole trained context is needed.
    gw = await startTestGateway({ agentFlags: { maxContextSize: 2048 } });
    client = new Anthropic({ baseURL: gw.baseURL.replace(/\/v1$/, ""), apiKey: gw.apiKey, maxRetries: 0 });
    await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: tools, layers: { harness: "tools" } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("answers messages.create with the API's shape, and the same text chat completions give", async () => {
    const message = await client.messages.create({ model: "stories", max_tokens: 20, system: "You tell stories.", messages: [{ role: "user", content: "Once upon a time" }], ...greedy });
    expect(message).toMatchObject({ type: "message", role: "assistant", model: "stories", stop_reason: "max_tokens", stop_sequence: null });
    expect(message.id).toMatch(/^msg_[A-Za-z0-9]{24}$/);
    expect(message.content).toHaveLength(1);
    const block = message.content[0]!;
    expect(block.type).toBe("text");
    expect(message.usage.output_tokens).toBe(20);
    expect(message.usage.input_tokens).toBeGreaterThan(0);

    const openai = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
    const chat = await openai.chat.completions.create({ model: "stories", max_tokens: 20, temperature: 0, messages: [{ role: "system", content: "You tell stories." }, { role: "user", content: "Once upon a time" }] });
    expect(block.type === "text" && block.text).toBe(chat.choices[0]!.message.content);
    expect(message.usage.input_tokens).toBe(chat.usage!.prompt_tokens);
  });

  it("streams with messages.stream: the event sequence, and the final message equal to the one not streamed", async () => {
    const body = { model: "stories", max_tokens: 16, messages: [{ role: "user" as const, content: [{ type: "text" as const, text: "Tell me a story" }] }], ...greedy };
    const whole = await client.messages.create(body);
    const stream = client.messages.stream(body);
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    const final = await stream.finalMessage();
    expect(types[0]).toBe("message_start");
    expect(types[1]).toBe("content_block_start");
    expect(types.slice(2, -3).every((t) => t === "content_block_delta")).toBe(true);
    expect(types.slice(-3)).toEqual(["content_block_stop", "message_delta", "message_stop"]);
    expect(final.content).toEqual(whole.content);
    expect(final.stop_reason).toBe("max_tokens");
    // The same prompt: what was evaluated and what was read from the sequence that held it add up alike.
    const prompt = (u: Anthropic.Usage) => u.input_tokens + (u.cache_read_input_tokens ?? 0);
    expect([prompt(final.usage), final.usage.output_tokens]).toEqual([prompt(whole.usage), 16]);
  });

  it("takes the key as a bearer token too, and ignores anthropic-version and anthropic-beta", async () => {
    const res = await fetch(`${gw.baseURL}/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "anthropic-version": "2023-06-01", "anthropic-beta": "tools-2024-04-04", "content-type": "application/json" },
      body: JSON.stringify({ model: "stories", max_tokens: 3, messages: [{ role: "user", content: "Hi" }] }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { stop_reason: string }).stop_reason).toBe("max_tokens");
    // The model list takes the key as x-api-key too; what the gateway does not serve under /v1/messages is refused in Anthropic's envelope.
    expect((await fetch(`${gw.baseURL}/models`, { headers: { "x-api-key": gw.apiKey } })).status).toBe(200);
    const batches = await fetch(`${gw.baseURL}/messages/batches`, { method: "POST", headers: { "x-api-key": gw.apiKey, "content-type": "application/json" }, body: "{}" });
    expect([batches.status, await batches.json()]).toEqual([404, { type: "error", error: { type: "not_found_error", message: expect.stringContaining("Unknown request URL") } }]);
  });

  it("calls a tool with input that follows its schema, and answers after its result (a round trip, streamed and not)", async () => {
    const weather = { name: "get_weather", description: "The weather in a city.", input_schema: WEATHER };
    const ask = { role: "user" as const, content: "What is the weather in Paris?" };
    const first = await client.messages.create({ model: tools, max_tokens: 200, tools: [weather], tool_choice: { type: "tool", name: "get_weather" }, messages: [ask], ...greedy });
    expect(first.stop_reason).toBe("tool_use");
    const use = first.content.find((b) => b.type === "tool_use");
    expect(use).toBeDefined();
    if (use?.type !== "tool_use") return;
    expect(use.name).toBe("get_weather");
    expect(schemaProblems(WEATHER, use.input)).toEqual([]);

    // Streamed, the call comes as input_json_delta pieces that the client joins into the same input.
    const stream = client.messages.stream({ model: tools, max_tokens: 200, tools: [weather], tool_choice: { type: "tool", name: "get_weather" }, messages: [ask], ...greedy });
    const deltas: string[] = [];
    stream.on("inputJson", (partial) => deltas.push(partial));
    const streamed = await stream.finalMessage();
    expect(deltas.length).toBeGreaterThan(0);
    expect(streamed.stop_reason).toBe("tool_use");
    expect(streamed.content.filter((b) => b.type === "tool_use").map((b) => b.type === "tool_use" && b.input)).toEqual([use.input]);

    const after = await client.messages.create({
      model: tools,
      max_tokens: 30,
      tools: [weather],
      tool_choice: { type: "none" },
      messages: [ask, { role: "assistant", content: first.content }, { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "Sunny, 21 degrees." }] }],
      ...greedy,
    });
    expect(["end_turn", "max_tokens"]).toContain(after.stop_reason);
    expect(after.content.every((b) => b.type === "text")).toBe(true);
    expect(after.content.map((b) => (b.type === "text" ? b.text : "")).join("").length).toBeGreaterThan(0);
  });

  it("counts a message's tokens with the model's own tokenizer and template, tools included: the input_tokens its answer reports", async () => {
    const plain = { model: "stories", system: "You tell stories.", messages: [{ role: "user" as const, content: "Once upon a time" }] };
    const counted = await client.messages.countTokens(plain);
    const answered = await client.messages.create({ ...plain, max_tokens: 2 });
    // Its prompt: the tokens evaluated for it, and those read from a sequence that held them.
    expect(counted).toEqual({ input_tokens: answered.usage.input_tokens + answered.usage.cache_read_input_tokens! });

    const weather = { name: "get_weather", description: "The weather in a city.", input_schema: WEATHER };
    const withTools = { model: tools, tools: [weather], messages: [{ role: "user" as const, content: "What is the weather in Paris?" }] };
    const toolCount = await client.messages.countTokens(withTools);
    const toolAnswer = await client.messages.create({ ...withTools, max_tokens: 40, ...greedy });
    expect(toolCount.input_tokens).toBe(toolAnswer.usage.input_tokens + toolAnswer.usage.cache_read_input_tokens!);
    // The functions' descriptions are part of the prompt the model reads.
    expect(toolCount.input_tokens).toBeGreaterThan((await client.messages.countTokens({ model: tools, messages: withTools.messages })).input_tokens);
    // Counting uses none of a key's tokens: a key of 40 tokens a minute counts a prompt longer than that ten times.
    const { key } = await gw.relay.control.keys.create(OP, gw.orgId, { tpm: 40 });
    const counter = new Anthropic({ baseURL: gw.baseURL.replace(/\/v1$/, ""), apiKey: key, maxRetries: 0 });
    expect(toolCount.input_tokens).toBeGreaterThan(40);
    for (let i = 0; i < 10; i++) expect((await counter.messages.countTokens(withTools)).input_tokens).toBe(toolCount.input_tokens);
    // What shapes an answer is not a count's: refused in Anthropic's envelope.
    const refused = await client.messages.countTokens({ ...plain, max_tokens: 5 } as never).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
  });

  it("holds the answer to a JSON schema given as output_config.format", async () => {
    const schema = { type: "object", properties: { mood: { type: "string", enum: ["happy", "sad"] }, score: { type: "integer" } }, required: ["mood", "score"], additionalProperties: false };
    const message = await client.messages.create({ model: "stories", max_tokens: 60, output_config: { format: { type: "json_schema", schema } }, messages: [{ role: "user", content: "How do you feel?" }], ...greedy });
    const text = message.content.map((b) => (b.type === "text" ? b.text : "")).join("");
    expect(schemaProblems(schema, JSON.parse(text))).toEqual([]);
  });
});
