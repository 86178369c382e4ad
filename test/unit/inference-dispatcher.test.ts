import { describe, expect, it, vi } from "vitest";
import { InferenceDispatcher } from "../../agent/link/inference-dispatcher.js";
import type { StackHost } from "../../agent/stacks/stack-host.js";
import { silentLogger, type AgentToRelay, type ChatInput } from "../../proto/index.js";
import { FakeRuntime } from "../fakes/fake-runtime.js";

/**
 * What the agent tells the relay of a request that did not end with its answer: usage travels only in the
 * runtime's events, and a canceled or failed stream's last event (`stopped`) says what it used.
 */
const ask = (content: string): ChatInput => ({ messages: [{ role: "user", content }], temperature: 1, topP: 1, maxTokens: 0, stop: [], presencePenalty: 0, frequencyPenalty: 0, stream: true });

function dispatcher(runtime: FakeRuntime) {
  const sent: AgentToRelay[] = [];
  const host = { runtime: () => runtime } as unknown as StackHost;
  return { sent, inference: new InferenceDispatcher(host, (m) => sent.push(m), silentLogger()) };
}

describe("the agent's account of a request that did not end with its answer", () => {
  it("charges a canceled request what its stream's last event said it used: the prompt and the words sent", async () => {
    const runtime = new FakeRuntime();
    const { sent, inference } = dispatcher(runtime);
    inference.start({ type: "infer", requestId: "r1", stackId: "s", input: ask("stall one two three"), credit: 32 });
    await vi.waitFor(() => expect(sent.filter((m) => m.type === "text")).toHaveLength(3));
    inference.cancel("r1", "The client closed the connection.");
    await vi.waitFor(() => expect(sent.at(-1)).toMatchObject({ type: "end", requestId: "r1", finishReason: "canceled" }));
    // The prompt's words (4) and the three words sent, as the fake counts them.
    expect(sent.at(-1)).toMatchObject({ usage: { promptTokens: 4, completionTokens: 3 } });
    expect(inference.canceled).toBe(1);
    expect(inference.inFlight).toBe(0);
  });

  it("sends a failure with its error and what was used until then", async () => {
    const runtime = new FakeRuntime();
    const { sent, inference } = dispatcher(runtime);
    inference.start({ type: "infer", requestId: "r2", stackId: "s", input: ask("fail runtime_unavailable"), credit: 32 });
    await vi.waitFor(() => expect(sent.at(-1)).toMatchObject({ type: "failed", requestId: "r2", error: { code: "runtime_unavailable" }, usage: { promptTokens: 2, completionTokens: 0 } }));
  });

  it("reads a canceled stream to its end even while it waits for credit, so its usage is never lost", async () => {
    const runtime = new FakeRuntime();
    const { sent, inference } = dispatcher(runtime);
    // One credit: the second word waits for the relay, which cancels instead.
    inference.start({ type: "infer", requestId: "r3", stackId: "s", input: ask("stall a b c"), credit: 1 });
    await vi.waitFor(() => expect(inference.stalled).toBe(1));
    inference.cancel("r3", "gone");
    await vi.waitFor(() => expect(sent.at(-1)).toMatchObject({ type: "end", finishReason: "canceled" }));
    expect(sent.filter((m) => m.type === "text")).toHaveLength(1);
    // The runtime had produced two words when the relay canceled (the second one waiting): both count.
    expect((sent.at(-1) as { usage: { completionTokens: number } }).usage.completionTokens).toBeGreaterThanOrEqual(2);
  });
});
