import { describe, expect, it, vi } from "vitest";
import { layersFor } from "../../agent/layers/layers-for.js";
import { mostConsistent } from "../../agent/layers/vote-orchestrator.js";
import type { ChatInput, ChatOptions, ModelRuntime, RuntimeEvent, StoppedEvent } from "../../agent/runtimes/model-runtime.js";
import { MakinaError, orchestratorSteps, type TokenEvent } from "../../proto/index.js";
import { FakeRuntime } from "../fakes/fake-runtime.js";

const ask = (content: string, extra: Partial<ChatInput> = {}): ChatInput => ({
  messages: [{ role: "user", content }],
  temperature: 1,
  topP: 1,
  maxTokens: 0,
  stop: [],
  presencePenalty: 0,
  frequencyPenalty: 0,
  stream: true,
  ...extra,
});

const orchestrated = (orchestrator: string, options: Record<string, unknown>, runtime: ModelRuntime) =>
  layersFor({ harness: "", harnessOptionsJson: "", orchestrator, orchestratorOptionsJson: JSON.stringify(options) })(runtime);

async function run(runtime: ModelRuntime, input: ChatInput, options?: ChatOptions): Promise<{ events: RuntimeEvent[]; text: string; end: Extract<TokenEvent, { type: "end" }>; stopped: StoppedEvent | undefined }> {
  const events: RuntimeEvent[] = [];
  for await (const ev of runtime.chat(input, options)) events.push(ev);
  const last = events.at(-1);
  return { events, text: events.map((e) => (e.type === "text" ? e.text : "")).join(""), end: last as Extract<TokenEvent, { type: "end" }>, stopped: last?.type === "stopped" ? last : undefined };
}

/** `runtime`, with the text pieces it yielded counted as they come (what a step produced before it was stopped). */
function counting(runtime: ModelRuntime): { runtime: ModelRuntime; pieces: () => number } {
  let pieces = 0;
  return {
    pieces: () => pieces,
    runtime: {
      contextSize: runtime.contextSize,
      endpoint: runtime.endpoint,
      async *chat(input, options) {
        for await (const ev of runtime.chat(input, options)) {
          if (ev.type === "text") pieces++;
          yield ev;
        }
      },
      close: () => runtime.close(),
    },
  };
}

const sum = (usages: { promptTokens: number; completionTokens: number }[]) =>
  usages.reduce((a, u) => ({ promptTokens: a.promptTokens + u.promptTokens, completionTokens: a.completionTokens + u.completionTokens }), { promptTokens: 0, completionTokens: 0 });

/** A model whose answers are scripted per call (in the order calls start), with their usage. */
class ScriptedRuntime implements ModelRuntime {
  readonly contextSize = 0;
  readonly endpoint = "scripted:";
  readonly inputs: ChatInput[] = [];
  constructor(private readonly answers: string[]) {}
  async *chat(input: ChatInput, options: ChatOptions = {}): AsyncGenerator<RuntimeEvent> {
    const answer = this.answers[this.inputs.length] ?? "";
    this.inputs.push(input);
    const words = answer.split(" ");
    for (const [i, w] of words.entries()) {
      yield { type: "text", text: i ? ` ${w}` : w };
    }
    yield { type: "end", finishReason: "stop", usage: { promptTokens: 10, completionTokens: words.length } };
  }
  async close(): Promise<void> {}
}

describe("the refine orchestrator", () => {
  it("drafts, critiques and revises; the client gets the last revision, and the usage of every step", async () => {
    const model = new ScriptedRuntime(["A first draft", "It lacks detail", "A better answer with detail"]);
    const { events, text, end } = await run(orchestrated("refine", {}, model), ask("Explain tides"));
    expect(text).toBe("A better answer with detail");
    // The final step streams in the pieces it was written in.
    expect(events.filter((e) => e.type === "text")).toHaveLength(5);
    expect(model.inputs).toHaveLength(3);
    const [draft, critique, revise] = model.inputs;
    expect(draft!.messages).toEqual([{ role: "user", content: "Explain tides" }]);
    // Steps before the last are read whole; the last is streamed as the client asked.
    expect([draft!.stream, critique!.stream, revise!.stream]).toEqual([false, false, true]);
    expect(critique!.messages.slice(1)).toEqual([{ role: "assistant", content: "A first draft" }, { role: "user", content: expect.stringContaining("Critique your answer") }]);
    expect(revise!.messages.at(-2)).toEqual({ role: "assistant", content: "A first draft" });
    expect(revise!.messages.at(-1)!.content).toContain("It lacks detail");
    expect(end).toEqual({ type: "end", finishReason: "stop", usage: { promptTokens: 30, completionTokens: 3 + 3 + 5 } });
  });

  it("runs 1 + 2 × rounds steps, with the prompts of its options, and its usage is their sum", async () => {
    const model = new FakeRuntime();
    const refine = orchestrated("refine", { rounds: 2, critique_prompt: "Find the flaws.", revise_prompt: "Fix them." }, model);
    const { end } = await run(refine, ask("one two three"));
    expect(model.seen).toHaveLength(orchestratorSteps("refine", { rounds: 2 }));
    expect(model.seen).toHaveLength(5);
    expect(model.seen[1]!.messages.at(-1)!.content).toBe("Find the flaws.");
    expect(model.seen[2]!.messages.at(-1)!.content).toMatch(/^Fix them\.\n\nCritique:\n/);
    expect(end.usage).toEqual(sum(model.usages));
  });

  it("holds the answer, not the critique, to the response format, and refuses tools", async () => {
    const model = new ScriptedRuntime(['{"a":1}', "Fine.", '{"a":2}']);
    const format = { type: "json_object" as const, name: "", schemaJson: "", strict: false };
    await run(orchestrated("refine", {}, model), ask("JSON please", { responseFormat: format }));
    expect(model.inputs.map((i) => i.responseFormat)).toEqual([format, undefined, format]);
    const tools = [{ name: "f", description: "", parametersJson: "", strict: false }];
    await expect(run(orchestrated("refine", {}, model), ask("x", { tools }))).rejects.toMatchObject({ code: "unsupported_parameter", param: "tools" });
  });

  it("stops at once when canceled: the step running ends, no other starts, and what ran is charged", async () => {
    const model = new FakeRuntime();
    const controller = new AbortController();
    const watched = counting(model);
    const running = run(orchestrated("refine", { rounds: 3 }, watched.runtime), ask("slow 20 a b c d e f g h i j k l m n o p q r s t"), { signal: controller.signal });
    await vi.waitFor(() => expect(watched.pieces()).toBeGreaterThan(2));
    controller.abort(new MakinaError("canceled", "The client closed the connection."));
    // The stream ends with `stopped`: canceled, with what the step that ran used.
    const { stopped } = await running;
    expect(stopped?.error.code).toBe("canceled");
    expect(model.active).toBe(0);
    expect(model.seen).toHaveLength(1);
    expect(stopped!.usage).toEqual(sum(model.usages));
    expect(stopped!.usage.completionTokens).toBeGreaterThan(2);
    expect(stopped!.usage.completionTokens).toBeLessThan(20);
  });
});

describe("the vote orchestrator", () => {
  it("samples k answers at once and answers with the most frequent one (without case and spacing)", async () => {
    const model = new ScriptedRuntime(["Lyon", "Paris", "paris ", "Marseille", "PARIS"]);
    const { text, end } = await run(orchestrated("vote", { samples: 5 }, model), ask("Capital of France?"));
    expect(text).toBe("Paris");
    expect(model.inputs).toHaveLength(5);
    expect(end.usage).toEqual({ promptTokens: 50, completionTokens: 6 });
  });

  it("gives each sample its own seed and the options' temperature when the request sets none", async () => {
    const model = new FakeRuntime();
    await run(orchestrated("vote", { samples: 3, temperature: 0.6 }, model), ask("hello", { seed: 41, unset: ["temperature", "top_p"] }));
    expect(model.seen.map((i) => [i.seed, i.temperature, i.stream])).toEqual([
      [41, 0.6, false],
      [42, 0.6, false],
      [43, 0.6, false],
    ]);
    await run(orchestrated("vote", {}, model), ask("hello", { temperature: 0.1 }));
    expect(model.seen.slice(3).map((i) => [i.seed, i.temperature])).toEqual([
      [undefined, 0.1],
      [undefined, 0.1],
      [undefined, 0.1],
    ]);
  });

  it("cancels every sample at once, and charges what they used", async () => {
    const model = new FakeRuntime();
    const controller = new AbortController();
    const running = run(orchestrated("vote", { samples: 4 }, model), ask("hang"), { signal: controller.signal });
    await vi.waitFor(() => expect(model.active).toBe(4));
    controller.abort(new MakinaError("canceled", "The client closed the connection."));
    const { stopped } = await running;
    expect(stopped?.error.code).toBe("canceled");
    expect(model.active).toBe(0);
    expect(stopped!.usage).toEqual(sum(model.usages));
    expect(stopped!.usage.promptTokens).toBe(4);
  });

  it("fails with the error of a sample that fails, and stops the others", async () => {
    let calls = 0;
    const model: ModelRuntime = {
      contextSize: 0,
      endpoint: "mixed:",
      async *chat(_input, options = {}) {
        if (++calls === 2) throw new MakinaError("context_length_exceeded", "Too long.", { param: "messages" });
        await new Promise((_, reject) => options.signal?.addEventListener("abort", () => reject(MakinaError.from(options.signal?.reason)), { once: true }));
        yield { type: "end", finishReason: "stop", usage: { promptTokens: 0, completionTokens: 0 } };
      },
      close: async () => {},
    };
    const { stopped } = await run(orchestrated("vote", { samples: 3 }, model), ask("x"));
    expect(stopped?.error).toMatchObject({ code: "context_length_exceeded", param: "messages" });
  });

  it("picks the answer sharing most words with the others when all differ", () => {
    expect(mostConsistent(["the sky is blue", "blue sky today", "the sky is very blue", "bananas"])).toBe(0);
    expect(mostConsistent(["a", "b", "c"])).toBe(0);
    expect(mostConsistent(["x y", "q", "x y", "q", "q"])).toBe(1);
  });
});

describe("the tools harness on the agent", () => {
  it("gives requests with tools its parallel_tool_calls default when they set none, and leaves the rest as they came", async () => {
    const model = new FakeRuntime();
    const harness = layersFor({ harness: "tools", harnessOptionsJson: JSON.stringify({ parallel_tool_calls: false }), orchestrator: "", orchestratorOptionsJson: "" })(model);
    const tools = [{ name: "f", description: "", parametersJson: "", strict: false }];
    await run(harness, ask("a", { tools }));
    await run(harness, ask("b", { tools, parallelToolCalls: true }));
    await run(harness, ask("c"));
    expect(model.seen.map((i) => i.parallelToolCalls)).toEqual([false, true, undefined]);
    expect(() => layersFor({ harness: "tools", harnessOptionsJson: '{"parallel_tool_calls": "often"}', orchestrator: "", orchestratorOptionsJson: "" })).toThrow(
      expect.objectContaining({ param: "harness_options.parallel_tool_calls" }),
    );
  });
});

describe("orchestrator options", () => {
  it("are checked when the layers are made, with the reason", () => {
    expect(() => orchestrated("vote", { samples: 1 }, new FakeRuntime())).toThrow(expect.objectContaining({ code: "invalid_value", param: "orchestrator_options.samples" }));
    expect(() => orchestrated("refine", { depth: 2 }, new FakeRuntime())).toThrow(expect.objectContaining({ param: "orchestrator_options.depth" }));
    expect(() => orchestrated("swarm", {}, new FakeRuntime())).toThrow(expect.objectContaining({ param: "orchestrator" }));
    expect(orchestratorSteps("vote", {})).toBe(3);
    expect(orchestratorSteps(null, {})).toBe(1);
  });
});
