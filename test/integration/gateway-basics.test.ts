import { gzipSync } from "node:zlib";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { testModelPath } from "../helpers/models.js";

describe("gateway basics over raw HTTP", () => {
  let gw: TestGateway;
  const post = (path: string, body: string | undefined, headers: Record<string, string> = {}) =>
    fetch(`${gw.relay.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json", ...headers }, body });

  beforeAll(async () => {
    gw = await startTestGateway({ model: testModelPath("stories260K-chat-template.gguf") });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("answers GET /health without a key", async () => {
    const res = await fetch(`${gw.relay.url}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
    expect(res.headers.get("x-request-id")).toMatch(/^req_/);
  });

  it.each([
    ["no Authorization header", undefined, 401, "authentication_error", "missing_api_key"],
    ["a key that is not a bearer token", "Basic abc", 401, "authentication_error", "invalid_api_key"],
    ["an unknown key", "Bearer mk_live_00000000000000000000000000000000", 401, "authentication_error", "invalid_api_key"],
  ])("refuses %s", async (_name, authorization, statusCode, type, code) => {
    const res = await fetch(`${gw.relay.url}/v1/models`, { headers: authorization ? { authorization } : {} });
    expect(res.status).toBe(statusCode);
    expect(res.headers.get("x-request-id")).toBeTruthy();
    expect(await res.json()).toEqual({ error: { message: expect.any(String), type, param: null, code } });
  });

  it("never echoes a whole key back", async () => {
    const key = "mk_live_ThisIsASecretLookingKey1234567890abcd";
    const body = await (await fetch(`${gw.relay.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).text();
    expect(body).not.toContain(key);
    expect(body).toContain("mk_live_");
  });

  it.each([
    ["POST", "/v1/completions", 404, "unsupported_endpoint"],
    ["GET", "/v1/nope", 404, "unknown_url"],
    ["DELETE", "/v1/models", 404, "unknown_url"],
  ])("answers %s %s with %i %s", async (method, path, statusCode, code) => {
    const res = await fetch(`${gw.relay.url}${path}`, { method, headers: { authorization: `Bearer ${gw.apiKey}` } });
    expect(res.status).toBe(statusCode);
    const body = (await res.json()) as { error: { code: string; type: string; message: string } };
    expect(body.error).toMatchObject({ type: "invalid_request_error", code });
    if (code === "unsupported_endpoint") expect(body.error.message).toContain("POST /v1/chat/completions");
    if (code === "unknown_url") expect(body.error.message).toBe(`Unknown request URL: ${method} ${path}. Please check the URL for typos.`);
  });

  it("answers 400 invalid_json, 415 for another content type and 413 past the body limit", async () => {
    const bad = await post("/v1/chat/completions", "{not json");
    expect([bad.status, ((await bad.json()) as { error: { code: string } }).error.code]).toEqual([400, "invalid_json"]);
    const text = await post("/v1/chat/completions", "hello", { "content-type": "text/plain" });
    expect([text.status, ((await text.json()) as { error: { code: string } }).error.code]).toEqual([415, "unsupported_media_type"]);
    const huge = await post("/v1/chat/completions", JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: "x".repeat(5 * 1024 * 1024) }] }));
    expect([huge.status, ((await huge.json()) as { error: { code: string } }).error.code]).toEqual([413, "request_too_large"]);
  });

  it("answers chat completions the same on every spelling of the path and every body encoding a client may use", async () => {
    const body = JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: "Hi" }], max_tokens: 2 });
    for (const path of ["/v1/chat/completions", "/v1/chat/completions?trace=1", "/v1/chat/completions/", "/V1/Chat/Completions"]) {
      const res = await post(path, body, { "x-request-id": "client-trace-1" });
      expect([path, res.status]).toEqual([path, 200]);
      expect(res.headers.get("x-request-id")).toBe("client-trace-1");
      expect(((await res.json()) as { object: string }).object).toBe("chat.completion");
    }
    const gzipped = await fetch(`${gw.relay.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json; charset=UTF-8", "content-encoding": "gzip" },
      body: gzipSync(body),
    });
    expect(gzipped.status).toBe(200);
    const utf16 = await post("/v1/chat/completions", body, { "content-type": "application/json; charset=utf-16" });
    expect([utf16.status, ((await utf16.json()) as { error: { code: string } }).error.code]).toEqual([415, "unsupported_media_type"]);
    const bomb = await fetch(`${gw.relay.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json", "content-encoding": "gzip" },
      body: gzipSync(JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: "x".repeat(8 * 1024 * 1024) }] })),
    });
    expect([bomb.status, ((await bomb.json()) as { error: { code: string } }).error.code]).toEqual([413, "request_too_large"]);
    const wrongMethod = await fetch(`${gw.relay.url}/v1/chat/completions`, { headers: { authorization: `Bearer ${gw.apiKey}` } });
    expect([wrongMethod.status, ((await wrongMethod.json()) as { error: { code: string } }).error.code]).toEqual([404, "unknown_url"]);
  });

  it("answers 404 model_not_found for a model that is not deployed", async () => {
    const res = await post("/v1/chat/completions", JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }));
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: { message: "The model `gpt-4o` does not exist or is not deployed.", type: "invalid_request_error", param: "model", code: "model_not_found" } });
  });

  it("renders the prompt with the model's own Jinja chat template and honours stop sequences", async () => {
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
    const free = await client.chat.completions.create({ model: gw.modelId, messages: [{ role: "user", content: "Hi! What is the capital of France?" }], max_tokens: 40, temperature: 0 });
    const text = free.choices[0]!.message.content!;
    const cut = text.indexOf(" ", 3);
    expect(cut).toBeGreaterThan(0);
    const stopAt = text.slice(cut, cut + 3);
    const stopped = await client.chat.completions.create({ model: gw.modelId, messages: [{ role: "user", content: "Hi! What is the capital of France?" }], max_tokens: 40, temperature: 0, stop: [stopAt] });
    expect(stopped.choices[0]!.finish_reason).toBe("stop");
    expect(stopped.choices[0]!.message.content).toBe(text.slice(0, cut));
  });

  it("streams a GGUF answer's first token at once and the tokens after it in frames per interval, the same text as unstreamed", async () => {
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
    // A machine whose model processes send later tokens once a minute at most: all of them leave with the end.
    const { machineId } = await gw.addMachine(gw.orgId, { streamIntervalMs: 60_000 });
    await gw.addStack({ orgId: gw.orgId, machineId, modelId: "framed" });
    const messages = [{ role: "user" as const, content: "Tell me a story." }];
    for (const model of ["framed", gw.modelId]) {
      const whole = await client.chat.completions.create({ model, messages, max_tokens: 40, temperature: 0 });
      const pieces: string[] = [];
      for await (const chunk of await client.chat.completions.create({ model, messages, max_tokens: 40, temperature: 0, stream: true })) {
        const content = chunk.choices[0]?.delta.content;
        if (content) pieces.push(content);
      }
      expect(pieces.join("")).toBe(whole.choices[0]!.message.content);
      expect(whole.usage!.completion_tokens).toBe(40);
      // The framed stack: the first token, then the 39 others in one piece (its process is far younger than the
      // minute of the clock its frames wait for).
      if (model === "framed") expect(pieces).toHaveLength(2);
    }
  });

  it("refuses a parameter the stack's runtime cannot honour instead of dropping it", async () => {
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
    for (const extra of [{ n: 2 }, { logprobs: true }, { tools: [{ type: "function" as const, function: { name: "f", parameters: {} } }] }]) {
      const err = await client.chat.completions.create({ model: gw.modelId, messages: [{ role: "user", content: "hi" }], ...extra }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err).toMatchObject({ status: 400, code: "unsupported_parameter", param: Object.keys(extra)[0] });
    }
    // An image part, at its place in the messages: a GGUF stack reads text only.
    const image = { type: "image_url" as const, image_url: { url: "https://images.example/cat.png" } };
    await expect(client.chat.completions.create({ model: gw.modelId, messages: [{ role: "user", content: "hi" }, { role: "user", content: [{ type: "text", text: "and?" }, image] }] })).rejects.toMatchObject({
      status: 400,
      code: "unsupported_parameter",
      param: "messages[1].content[1].type",
      message: expect.stringContaining("Image parts are not supported by the gguf runtime serving `stories`."),
    });
  });

  it("honours presence and frequency penalties on the GGUF runtime", async () => {
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
    const body = { model: gw.modelId, messages: [{ role: "user" as const, content: "Once upon a time" }], max_tokens: 60, temperature: 0 };
    const plain = await client.chat.completions.create(body);
    const penalised = await client.chat.completions.create({ ...body, frequency_penalty: 2, presence_penalty: 2 });
    expect(penalised.choices[0]!.message.content).not.toBe(plain.choices[0]!.message.content);
  });

  it("refuses max_tokens beyond the model's context", async () => {
    const res = await post("/v1/chat/completions", JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: "hi" }], max_tokens: 100000 }));
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("context_length_exceeded");
  });
});
