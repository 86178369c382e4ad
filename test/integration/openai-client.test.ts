import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";

describe("an OpenAI client against a relay with a GGUF model on a registered machine", () => {
  let gw: TestGateway;
  let client: OpenAI;

  beforeAll(async () => {
    gw = await startTestGateway();
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("lists the deployed model", async () => {
    const list = await client.models.list();
    expect(list.data).toEqual([{ id: "stories", object: "model", created: expect.any(Number), owned_by: "test-org" }]);
  });

  it("answers a non-streamed chat completion with the specification's shape", async () => {
    const res = await client.chat.completions.create({ model: "stories", messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 20, temperature: 0 });
    expect(res.id).toMatch(/^chatcmpl-/);
    expect(res.object).toBe("chat.completion");
    expect(res.model).toBe("stories");
    expect(res.choices).toHaveLength(1);
    expect(res.choices[0]!.index).toBe(0);
    expect(res.choices[0]!.message.role).toBe("assistant");
    expect(typeof res.choices[0]!.message.content).toBe("string");
    expect(res.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(["stop", "length"]).toContain(res.choices[0]!.finish_reason);
    expect(res.usage!.prompt_tokens).toBeGreaterThan(0);
    expect(res.usage!.completion_tokens).toBeGreaterThan(0);
    expect(res.usage!.total_tokens).toBe(res.usage!.prompt_tokens + res.usage!.completion_tokens);
  });

  it("streams chunks that share one id, start with the role and end with a finish reason", async () => {
    const stream = await client.chat.completions.create({ model: "stories", messages: [{ role: "user", content: "Tell me a story" }], max_tokens: 16, temperature: 0, stream: true });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(2);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks[0]!.id).toMatch(/^chatcmpl-/);
    expect(chunks.every((c) => c.object === "chat.completion.chunk")).toBe(true);
    expect(chunks[0]!.choices[0]!.delta.role).toBe("assistant");
    const last = chunks.at(-1)!;
    expect(last.choices[0]!.finish_reason).toBe("length");
    expect(chunks.slice(0, -1).every((c) => c.choices[0]!.finish_reason === null)).toBe(true);
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
    expect(text.length).toBeGreaterThan(0);
  });

  it("gives the same text streamed and not streamed at temperature 0", async () => {
    const body = { model: "stories", messages: [{ role: "user" as const, content: "Once upon a time" }], max_tokens: 24, temperature: 0 };
    const whole = await client.chat.completions.create(body);
    const stream = await client.chat.completions.create({ ...body, stream: true });
    let text = "";
    for await (const c of stream) text += c.choices[0]?.delta.content ?? "";
    expect(text).toBe(whole.choices[0]!.message.content);
  });

  it("stops at max_tokens with finish_reason length and exactly that many completion tokens", async () => {
    const res = await client.chat.completions.create({ model: "stories", messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 5, temperature: 0 });
    expect(res.choices[0]!.finish_reason).toBe("length");
    expect(res.usage!.completion_tokens).toBe(5);
  });

  it("reports usage in an extra chunk when the stream asks for it", async () => {
    const stream = await client.chat.completions.create({
      model: "stories",
      messages: [{ role: "user", content: "Hello" }],
      max_tokens: 6,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    const usageChunk = chunks.at(-1)!;
    expect(usageChunk.choices).toEqual([]);
    expect(usageChunk.usage!.completion_tokens).toBe(6);
    expect(usageChunk.usage!.total_tokens).toBe(usageChunk.usage!.prompt_tokens + 6);
  });

  it("rejects an unknown key with 401 and the specification's error body", async () => {
    const bad = new OpenAI({ baseURL: gw.baseURL, apiKey: "mk_live_thisKeyDoesNotExist0000000000000000", maxRetries: 0 });
    const err = await bad.models.list().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    const e = err as InstanceType<typeof OpenAI.AuthenticationError>;
    expect(e.status).toBe(401);
    expect(e.type).toBe("authentication_error");
    expect(e.code).toBe("invalid_api_key");
  });
});
