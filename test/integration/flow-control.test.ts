import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DEFAULT_INITIAL_CREDIT } from "../../proto/index.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";

// The same contract whether the link is gRPC (agents on other machines) or a direct call (`makina up`).
describe.each(["grpc", "in-process"] as const)("streaming over the link (%s)", (link) => {
  let gw: TestGateway;
  beforeAll(async () => {
    // Each token its own chunk (the model process sends every token as it comes), so that a window of chunks is
    // a window of tokens: these tests count them.
    gw = await startTestGateway({ link, agentFlags: { streamIntervalMs: 0 } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("sends server-sent events with the documented headers, each `data: ` line a chunk, ending with data: [DONE]", async () => {
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 6, temperature: 0, stream: true }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(res.headers.get("x-accel-buffering")).toBe("no");
    const events = (await res.text()).split("\n\n").filter((e) => e !== "");
    expect(events.every((e) => e.startsWith("data: ") && !e.includes("\n"))).toBe(true);
    expect(events.at(-1)).toBe("data: [DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)) as { id: string; created: number; model: string; choices: { delta: Record<string, string>; finish_reason: string | null }[] });
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: "assistant", content: "" });
    expect(chunks.at(-1)!.choices[0]).toMatchObject({ delta: {}, finish_reason: "length" });
    expect(new Set(chunks.map((c) => `${c.id}|${c.created}|${c.model}`)).size).toBe(1);
  });

  it("holds a request back at its credit window while its consumer does not read, and loses nothing", async () => {
    const session = gw.relay.registry.get(gw.machineId)!;
    const inference = gw.agent.inference;
    const call = { messages: [{ role: "user", content: "Once upon a time" }], temperature: 0, topP: 1, maxTokens: 200, stop: [], presencePenalty: 0, frequencyPenalty: 0, stream: true };

    let expected = "";
    for await (const ev of session.infer(gw.stackId, call)) if (ev.type === "text") expected += ev.text;

    const sentBefore = inference.chunksSent;
    const events = session.infer(gw.stackId, call);
    const first = await events.next();
    // The consumer now stops reading: the agent may send exactly one window, then must wait.
    await vi.waitFor(() => expect(inference.stalled).toBe(1), { timeout: 10_000, interval: 10 });
    expect(inference.chunksSent - sentBefore).toBe(DEFAULT_INITIAL_CREDIT);

    let text = first.value!.type === "text" ? first.value!.text : "";
    let done: { finishReason: string; usage: { completionTokens: number } } | undefined;
    for await (const ev of events) {
      if (ev.type === "text") text += ev.text;
      else if (ev.type === "end") done = ev;
    }
    expect(text).toBe(expected);
    expect(done).toMatchObject({ finishReason: "length", usage: { completionTokens: 200 } });
    expect(inference.stalled).toBe(0);
  });

  it("cancels the generation on the machine when the consumer leaves the stream early", async () => {
    const session = gw.relay.registry.get(gw.machineId)!;
    const inference = gw.agent.inference;
    const events = session.infer(gw.stackId, { messages: [{ role: "user", content: "Tell me a long story" }], temperature: 0, topP: 1, maxTokens: 400, stop: [], presencePenalty: 0, frequencyPenalty: 0, stream: true });
    await events.next();
    await vi.waitFor(() => expect(inference.stalled).toBe(1), { timeout: 10_000, interval: 10 });
    await events.return(undefined);
    await vi.waitFor(() => expect(inference.inFlight).toBe(0), { timeout: 5_000, interval: 10 });
    expect(session.inFlight).toBe(0);
  });
});
