import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";

// Routing and the error contract with the stand-in model of test/fakes (no llama.cpp): what the runtime does
// is set by the prompt, so every path is reached on purpose.
describe("routing and runtime errors, with a stand-in model", () => {
  let gw: TestGateway;
  let client: OpenAI;
  const post = (body: Record<string, unknown>, signal?: AbortSignal) =>
    fetch(`${gw.baseURL}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" }, body: JSON.stringify(body), signal });

  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake" });
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("answers with what the model produced, streamed and not, with the usage it counted", async () => {
    const whole = await client.chat.completions.create({ model: gw.modelId, messages: [{ role: "user", content: "alpha beta gamma" }] });
    expect(whole.choices[0]!.message.content).toBe("alpha beta gamma");
    expect(whole.choices[0]!.finish_reason).toBe("stop");
    expect(whole.usage).toEqual({ prompt_tokens: 3, completion_tokens: 3, total_tokens: 6, prompt_tokens_details: { cached_tokens: 0 } });

    const stream = await client.chat.completions.create({ model: gw.modelId, messages: [{ role: "user", content: "alpha beta gamma delta" }], max_tokens: 3, stream: true, stream_options: { include_usage: true } });
    const deltas: string[] = [];
    let finish: string | null = null;
    let usage: unknown;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) deltas.push(chunk.choices[0].delta.content);
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(deltas).toEqual(["alpha", " beta", " gamma"]);
    expect(finish).toBe("length");
    expect(usage).toEqual({ prompt_tokens: 4, completion_tokens: 3, total_tokens: 7, prompt_tokens_details: { cached_tokens: 0 } });
  });

  it.each([
    ["context_length_exceeded", 400, "invalid_request_error", null],
    ["runtime_unavailable", 503, "service_unavailable_error", "2"],
    ["internal_error", 500, "server_error", null],
  ])("answers a runtime failing with %s with %i in the error envelope", async (code, status, type, retryAfter) => {
    const res = await post({ model: gw.modelId, messages: [{ role: "user", content: `fail ${code}` }] });
    expect(res.status).toBe(status);
    expect(res.headers.get("retry-after")).toBe(retryAfter);
    const body = (await res.json()) as { error: { type: string; code: string; message: string } };
    expect(body.error).toMatchObject({ type, code });
  });

  it("keeps what went wrong inside the machine to itself: an unexpected failure is a plain 500", async () => {
    const res = await post({ model: gw.modelId, messages: [{ role: "user", content: "fail secret_detail_of_the_machine" }] });
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(text).not.toContain("secret_detail_of_the_machine");
    expect(JSON.parse(text)).toEqual({ error: { message: "The server had an error while processing your request.", type: "server_error", param: null, code: "internal_error" } });
  });

  it("sends each request to the machine serving the model with the fewest requests in flight", async () => {
    const second = await gw.addMachine(gw.orgId);
    await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: "shared" });
    await gw.addStack({ orgId: gw.orgId, machineId: second.machineId, modelId: "shared" });
    const onFirst = gw.fake(gw.machineId, "shared");
    const onSecond = gw.fake(second.machineId, "shared");

    const held = new AbortController();
    const hanging = post({ model: "shared", messages: [{ role: "user", content: "hang" }], stream: true }, held.signal).catch(() => undefined);
    await vi.waitFor(() => expect(onFirst.seen.length + onSecond.seen.length).toBe(1), { timeout: 5_000, interval: 10 });
    const busy = onFirst.seen.length === 1 ? onFirst : onSecond;
    const idle = busy === onFirst ? onSecond : onFirst;
    for (let i = 0; i < 3; i++) {
      const res = await post({ model: "shared", messages: [{ role: "user", content: `request ${i}` }] });
      expect(res.status).toBe(200);
    }
    expect(idle.seen.map((input) => input.messages.at(-1)!.content)).toEqual(["request 0", "request 1", "request 2"]);
    expect(busy.seen).toHaveLength(1);
    held.abort();
    await hanging;
    await vi.waitFor(() => expect(gw.agent.inference.inFlight + second.agent.inference.inFlight).toBe(0), { timeout: 5_000, interval: 10 });
  });
});

describe("a runtime that stalls in the middle of its answer", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake", relayFlags: { streamIdleTimeoutMs: 300 } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("ends the stream with a stream_incomplete error event and no [DONE] once it has been quiet too long, and stops it on the machine", async () => {
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: "stall once upon" }], stream: true }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('"content":"once"');
    expect(text).toContain('"code":"stream_incomplete"');
    expect(text).not.toContain("[DONE]");
    await vi.waitFor(() => expect(gw.agent.inference.inFlight).toBe(0), { timeout: 5_000, interval: 10 });
    expect(gw.agent.inference.canceled).toBe(1);
  });

  it("does not count a client that reads slowly as a stalled runtime", async () => {
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: Array.from({ length: 60_000 }, (_, i) => `w${i}`).join(" ") }], stream: true }),
    });
    const reader = res.body!.getReader();
    await reader.read();
    // The client stops reading (more than the sockets' buffers hold is on its way): the relay holds credit back and the
    // machine waits for it; the pause lasts longer than the idle limit, yet nobody stalled.
    await vi.waitFor(() => expect(gw.agent.inference.stalled).toBe(1), { timeout: 10_000, interval: 10 });
    await new Promise((r) => setTimeout(r, 900));
    let text = "";
    const decoder = new TextDecoder();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    expect(text).toContain("w59999");
    expect(text).toContain("[DONE]");
    expect(text).not.toContain("stream_incomplete");
  });
});
