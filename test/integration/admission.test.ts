import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";

/** Requests in flight per stack are bounded, with a bounded queue beyond: the stand-in model holds requests as told. */
describe("admission control: a stack runs so many requests at once, a few more wait their turn, the rest get 503", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake", relayFlags: { maxInFlightPerStack: 2, maxQueuePerStack: 1, queueTimeoutMs: 60_000 } });
  });
  afterAll(async () => {
    await gw?.close();
  });
  const chat = (content: string, stream = false, signal?: AbortSignal) =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content }], stream }),
      signal,
    });

  it("queues the request past the limit until one finishes, and refuses the one past the queue at once with Retry-After", async () => {
    const controller = new AbortController();
    // Two streams that send a word and then hold their place.
    const held = await Promise.all([chat("stall one", true, controller.signal), chat("stall two", true)]);
    expect(held.map((r) => r.status)).toEqual([200, 200]);
    expect(gw.relay.gate.load(gw.stackId)).toEqual({ inFlight: 2, waiting: 0 });

    const queued = chat("patient words");
    await vi.waitFor(() => expect(gw.relay.gate.load(gw.stackId)).toEqual({ inFlight: 2, waiting: 1 }), { timeout: 5_000, interval: 5 });
    const refused = await chat("one too many");
    expect([refused.status, refused.headers.get("retry-after")]).toEqual([503, "1"]);
    expect(((await refused.json()) as { error: unknown }).error).toEqual({
      message: "The model is at capacity: 2 requests running and 1 waiting. Retry shortly.",
      type: "service_unavailable_error",
      param: null,
      code: "runtime_unavailable",
    });
    expect(gw.fake(gw.machineId, gw.modelId).seen.map((s) => s.messages.at(-1)!.content)).toEqual(["stall one", "stall two"]);

    // One held stream ends (its client leaves): the queued request runs and is answered.
    controller.abort();
    const answered = await queued;
    expect(answered.status).toBe(200);
    expect(((await answered.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe("patient words");
    await held[1]!.body!.cancel();
    await vi.waitFor(() => expect(gw.relay.gate.load(gw.stackId)).toEqual({ inFlight: 0, waiting: 0 }), { timeout: 5_000, interval: 5 });
  });
});

describe("a queue that does not move", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake", relayFlags: { maxInFlightPerStack: 1, queueTimeoutMs: 300 } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("answers a waiting request 503 runtime_unavailable with Retry-After once it waited queueTimeoutMs, never later", async () => {
    const body = (content: string) => JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content }], stream: true });
    const headers = { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" };
    const holder = await fetch(`${gw.baseURL}/chat/completions`, { method: "POST", headers, body: body("stall holding") });
    const waited = await fetch(`${gw.baseURL}/chat/completions`, { method: "POST", headers, body: body("never runs") });
    expect([waited.status, waited.headers.get("retry-after")]).toEqual([503, "5"]);
    expect(((await waited.json()) as { error: { message: string } }).error.message).toBe("The model stayed at capacity for 0.3 s while this request waited. Retry shortly.");
    await holder.body!.cancel();
  });
});

describe("a non-streamed request that takes too long", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake", relayFlags: { requestTimeoutMs: 400 } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("ends with 504 timeout after MAKINA_REQUEST_TIMEOUT_MS, and stops the generation on the machine", async () => {
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: "slow 200 one two three four five six" }] }),
    });
    expect([res.status, ((await res.json()) as { error: { code: string } }).error.code]).toEqual([504, "timeout"]);
    await vi.waitFor(() => expect(gw.agent.inference.inFlight).toBe(0), { timeout: 5_000, interval: 10 });
  });
});
