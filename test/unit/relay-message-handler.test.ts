import { describe, expect, it, vi } from "vitest";
import type { InferenceDispatcher } from "../../agent/link/inference-dispatcher.js";
import { RelayMessageHandler } from "../../agent/link/relay-message-handler.js";
import type { StackHost } from "../../agent/stacks/stack-host.js";
import { silentLogger, type AgentToRelay } from "../../proto/index.js";

describe("the agent's handling of the relay's messages", () => {
  it("stops a deployment step the relay canceled, and answers that it failed as canceled", async () => {
    const sent: AgentToRelay[] = [];
    let seenSignal: AbortSignal | undefined;
    // A step that runs until it is told to stop, as a long download does.
    const host = {
      run: (_stackId: string, _step: unknown, _progress: unknown, signal?: AbortSignal) =>
        new Promise((_, reject) => {
          seenSignal = signal;
          signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
        }),
    } as unknown as StackHost;
    const handler = new RelayMessageHandler({ inference: {} as InferenceDispatcher, host, send: (m) => sent.push(m), onStepDone: () => {}, log: silentLogger() });
    handler.handle({ type: "command", commandId: "c1", stackId: "stk_1", step: { kind: "pullModel", ref: "hf:o/r/f.gguf", sha256: "", runtime: "gguf" } });
    expect(seenSignal?.aborted).toBe(false);
    handler.handle({ type: "cancelCommand", commandId: "c1", reason: "the stack was undeployed" });
    expect(seenSignal?.aborted).toBe(true);
    await vi.waitFor(() => expect(sent).toEqual([{ type: "stepFailed", commandId: "c1", error: { code: "canceled", message: "the stack was undeployed", retryAfterMs: 0, param: "" } }]));
  });
});
