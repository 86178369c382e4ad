import OpenAI from "openai";
import type { FunctionTool, ResponseInputItem } from "openai/resources/responses/responses";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { schemaProblems } from "../helpers/json-schema-check.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";

const WEATHER = {
  type: "object",
  properties: { city: { type: "string", maxLength: 12 }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
  required: ["city", "unit"],
  additionalProperties: false,
};

describe("the Responses API with the official client, on GGUF stacks", () => {
  let gw: TestGateway;
  let client: OpenAI;
  const tools = "tools-model";
  beforeAll(async () => {
    // The tools are described to the model in its prompt: the test model's whole trained context is needed.
    gw = await startTestGateway({ agentFlags: { maxContextSize: 2048 } });
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
    await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: tools, layers: { harness: "tools" } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("answers responses.create with the response object, and the same text chat completions give", async () => {
    const response = await client.responses.create({ model: "stories", instructions: "You tell stories.", input: "Once upon a time", max_output_tokens: 20, temperature: 0 });
    expect(response).toMatchObject({ object: "response", model: "stories", status: "incomplete", incomplete_details: { reason: "max_output_tokens" }, instructions: "You tell stories.", store: false, error: null });
    expect(response.id).toMatch(/^resp_[A-Za-z0-9]{40}$/);
    expect(response.output).toHaveLength(1);
    expect(response.output[0]).toMatchObject({ type: "message", role: "assistant", status: "completed" });
    expect(response.usage).toMatchObject({ output_tokens: 20, total_tokens: response.usage!.input_tokens + 20 });

    const chat = await client.chat.completions.create({ model: "stories", max_tokens: 20, temperature: 0, messages: [{ role: "system", content: "You tell stories." }, { role: "user", content: "Once upon a time" }] });
    expect(response.output_text).toBe(chat.choices[0]!.message.content);
    expect(response.usage!.input_tokens).toBe(chat.usage!.prompt_tokens);
  });

  it("streams the typed events in order, each with its sequence number, to the same final response", async () => {
    const body = { model: "stories", input: [{ role: "user" as const, content: [{ type: "input_text" as const, text: "Tell me a story" }] }], max_output_tokens: 16, temperature: 0 };
    const whole = await client.responses.create(body);
    const stream = client.responses.stream(body);
    const events: { type: string; sequence_number: number }[] = [];
    for await (const event of stream) events.push(event);
    const final = await stream.finalResponse();
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const types = events.map((e) => e.type);
    expect(types.slice(0, 4)).toEqual(["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]);
    expect(types.slice(4, -4).every((t) => t === "response.output_text.delta")).toBe(true);
    expect(types.slice(-4)).toEqual(["response.output_text.done", "response.content_part.done", "response.output_item.done", "response.incomplete"]);
    expect(final.output_text).toBe(whole.output_text);
    // The same prompt, its tokens held by the sequence that served the first: only the cached share differs.
    expect({ ...final.usage, input_tokens_details: whole.usage!.input_tokens_details }).toEqual(whole.usage);

    // The same with `stream: true` on create, as agent frameworks ask.
    const raw = await client.responses.create({ ...body, stream: true });
    let text = "";
    for await (const event of raw) if (event.type === "response.output_text.delta") text += event.delta;
    expect(text).toBe(whole.output_text);
  });

  it("calls a function tool and answers after its output: a round trip, streamed and not", async () => {
    const weather: FunctionTool = { type: "function", name: "get_weather", description: "The weather in a city.", parameters: WEATHER, strict: true };
    const ask: ResponseInputItem = { role: "user", content: "What is the weather in Paris?" };
    const first = await client.responses.create({ model: tools, input: [ask], tools: [weather], tool_choice: { type: "function", name: "get_weather" }, max_output_tokens: 200, temperature: 0 });
    const call = first.output.find((item) => item.type === "function_call");
    expect(call).toBeDefined();
    if (call?.type !== "function_call") return;
    expect(call.name).toBe("get_weather");
    expect(call.call_id).toMatch(/^call_/);
    expect(schemaProblems(WEATHER, JSON.parse(call.arguments))).toEqual([]);

    const stream = client.responses.stream({ model: tools, input: [ask], tools: [weather], tool_choice: { type: "function", name: "get_weather" }, max_output_tokens: 200, temperature: 0 });
    const deltas: string[] = [];
    stream.on("response.function_call_arguments.delta", (e) => deltas.push(e.delta));
    const streamed = await stream.finalResponse();
    expect(deltas.join("")).toBe(call.arguments);
    expect(streamed.output.find((item) => item.type === "function_call")).toMatchObject({ name: "get_weather", arguments: call.arguments, status: "completed" });

    const after = await client.responses.create({
      model: tools,
      input: [ask, ...first.output.filter((item) => item.type === "function_call"), { type: "function_call_output", call_id: call.call_id, output: "Sunny, 21 degrees." }],
      tools: [weather],
      tool_choice: "none",
      max_output_tokens: 30,
      temperature: 0,
    });
    expect(after.output.every((item) => item.type === "message")).toBe(true);
    expect(after.output_text.length).toBeGreaterThan(0);
  });

  it("holds the answer to a JSON schema given as text.format", async () => {
    const schema = { type: "object", properties: { mood: { type: "string", enum: ["happy", "sad"] }, score: { type: "integer" } }, required: ["mood", "score"], additionalProperties: false };
    const response = await client.responses.create({ model: "stories", input: "How do you feel?", text: { format: { type: "json_schema", name: "feeling", schema, strict: true } }, max_output_tokens: 60, temperature: 0 });
    expect(schemaProblems(schema, JSON.parse(response.output_text))).toEqual([]);
    expect(response.text).toMatchObject({ format: { type: "json_schema", name: "feeling" } });
  });

  it("names its own fields in what the runtime refuses: text.format for response_format, a tool's parameters for its schema", async () => {
    const weather: FunctionTool = { type: "function", name: "get_weather", parameters: WEATHER, strict: true };
    // The GGUF runtime cannot hold an answer to a schema while the model may call tools (a refusal of the machine's).
    const err = await client.responses.create({ model: tools, input: "Weather?", tools: [weather], text: { format: { type: "json_schema", name: "w", schema: WEATHER } }, max_output_tokens: 5 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ code: "unsupported_parameter", param: "text.format" });
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).message).not.toContain("response_format");
    // A keyword of a tool's schema the runtime cannot enforce: named inside this API's field, and in the text by its place in the schema.
    const counted: FunctionTool = { type: "function", name: "count", parameters: { type: "object", properties: { n: { type: "integer", minimum: 1 } }, required: ["n"], additionalProperties: false }, strict: true };
    const keyword = await client.responses.create({ model: tools, input: "Count", tools: [counted], max_output_tokens: 5 }).catch((e: unknown) => e);
    expect((keyword as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ code: "invalid_value", param: "tools[0].parameters.properties.n.minimum", message: "Invalid schema at 'properties.n.minimum': the keyword 'minimum' cannot be enforced by this model's runtime." });
  });

  it("refuses to continue a stored response, saying to send the conversation, and keeps none to fetch", async () => {
    const err = await client.responses.create({ model: "stories", input: "Go on", previous_response_id: "resp_abc" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ code: "unsupported_parameter", param: "previous_response_id", message: expect.stringContaining("send the whole conversation in 'input'") });
    const fetched = await client.responses.retrieve("resp_abc").catch((e: unknown) => e);
    expect(fetched).toBeInstanceOf(OpenAI.NotFoundError);
    expect((fetched as InstanceType<typeof OpenAI.NotFoundError>).message).toContain("does not keep responses");
  });
});
