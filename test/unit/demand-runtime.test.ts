import { describe, expect, it } from "vitest";
import { silentLogger, type ChatInput, type RuntimeState } from "../../proto/index.js";
import { DemandRuntime } from "../../agent/stacks/demand-runtime.js";
import { ResidencyBook } from "../../agent/stacks/residency-book.js";
import type { ModelRuntime, RuntimeEvent } from "../../agent/runtimes/model-runtime.js";

/**
 * The rules of on-demand loading (agent/stacks/demand-runtime.ts, residency-book.ts), with scripted runtimes whose
 * answers end when the test says: which runtime is unloaded for room, and when. (test/integration/on-demand.test.ts
 * runs the same rules on real GGUF models through the gateway; what it cannot hold still, a request in flight for
 * as long as a test needs, is held here.)
 */
/** What each request asks (the scripted runtimes answer anything). */
const INPUT: ChatInput = { messages: [{ role: "user", content: "hi" }], temperature: 1, topP: 1, maxTokens: 4, stop: [], presencePenalty: 0, frequencyPenalty: 0, stream: false };

describe("on-demand runtimes on one machine", () => {
  /** A model "loaded" by the test: its answers wait, after their first word, for `finish()`; `closed` once unloaded. */
  const scripted = () => {
    let finish = () => {};
    const finished = new Promise<void>((resolve) => (finish = resolve));
    const runtime = {
      closed: false,
      contextSize: 512,
      endpoint: "in-process",
      async *chat(): AsyncGenerator<RuntimeEvent> {
        yield { type: "text", text: "once" };
        await finished;
        yield { type: "end", finishReason: "stop", usage: { promptTokens: 1, completionTokens: 1 } };
      },
      async close() {
        runtime.closed = true;
      },
      finish: () => finish(),
    };
    return runtime;
  };
  const machine = (maxLoaded: number, loadTimeoutMs = 2000, budgetBytes = 0) => {
    const book = new ResidencyBook({ maxLoaded, budgetBytes });
    const made: Record<string, ReturnType<typeof scripted>[]> = {};
    const states: Record<string, RuntimeState[]> = {};
    const stack = (name: string, idleUnloadMs = 0, bytes = 0) =>
      new DemandRuntime({
        stackId: name,
        modelId: name,
        memoryBytes: () => bytes,
        book,
        idleUnloadMs,
        loadTimeoutMs,
        start: async () => {
          const r = scripted();
          (made[name] ??= []).push(r);
          return r as unknown as ModelRuntime;
        },
        onState: (state) => void (states[name] ??= []).push(state),
        log: silentLogger(),
      });
    return { book, made, states, stack };
  };
  /** Starts a request and reads its first event: it is in flight, the model loaded. */
  const begin = async (runtime: DemandRuntime) => {
    const events = runtime.chat(INPUT);
    await events.next();
    return events;
  };
  const drain = async (events: AsyncGenerator<RuntimeEvent>) => {
    while (!(await events.next()).done);
  };

  it("never unloads a runtime serving a request: a load waits for a request to end, then takes its room", async () => {
    const m = machine(2);
    const [a, b, c] = [m.stack("a"), m.stack("b"), m.stack("c")];
    const inA = await begin(a);
    const inB = await begin(b);
    expect(m.book.loaded().sort()).toEqual(["a", "b"]);
    // c waits: both loaded runtimes serve a request.
    let cServed = false;
    const inC = begin(c).then((events) => {
      cServed = true;
      return events;
    });
    // c's load has begun and waits for room (a turn of the event loop is all it takes to get there).
    await new Promise((r) => setImmediate(r));
    expect(m.states.c).toEqual(["loading"]);
    expect(cServed).toBe(false);
    expect(m.made.a![0]!.closed || m.made.b![0]!.closed).toBe(false);
    // b's request ends: b is idle, and unloaded for c; a, still serving, stays.
    m.made.b![0]!.finish();
    await drain(inB);
    const events = await inC;
    expect(m.made.b![0]!.closed).toBe(true);
    expect(m.made.a![0]!.closed).toBe(false);
    expect(m.book.loaded().sort()).toEqual(["a", "c"]);
    expect(m.states.b).toEqual(["loading", "ready", "unloading", "unloaded"]);
    m.made.a![0]!.finish();
    m.made.c![0]!.finish();
    await drain(inA);
    await drain(events);
  });

  it("answers 503 insufficient_memory naming what holds the machine when no request ends within the load timeout", async () => {
    const m = machine(1, 300);
    const [alpha, beta] = [m.stack("alpha"), m.stack("beta")];
    const inAlpha = await begin(alpha);
    await expect(begin(beta)).rejects.toMatchObject({ code: "insufficient_memory", message: expect.stringContaining(": alpha (") });
    expect(m.states.beta).toEqual(["loading", "unloaded"]);
    expect(m.made.alpha![0]!.closed).toBe(false);
    // Once alpha's request ends, beta loads in its place.
    m.made.alpha![0]!.finish();
    await drain(inAlpha);
    const inBeta = await begin(beta);
    expect(m.made.alpha![0]!.closed).toBe(true);
    m.made.beta![0]!.finish();
    await drain(inBeta);
  });

  it("keeps within a memory budget: a load unloads the least recently used until it fits, and a model larger than the whole budget is refused at once", async () => {
    const MiB = 1024 ** 2;
    const m = machine(0, 300, 1000 * MiB);
    const [a, b, c] = [m.stack("a", 0, 400 * MiB), m.stack("b", 0, 400 * MiB), m.stack("c", 0, 500 * MiB)];
    for (const runtime of [a, b]) {
      const events = await begin(runtime);
      m.made[runtime.modelId]!.at(-1)!.finish();
      await drain(events);
    }
    expect(m.book.usedBytes()).toBe(800 * MiB);
    // c (500 MiB) fits beside one of them only: a, used least lately, is unloaded.
    const inC = await begin(c);
    expect(m.book.loaded().sort()).toEqual(["b", "c"]);
    expect(m.made.a![0]!.closed).toBe(true);
    // With c serving and b idle, a comes back in b's place; then nothing fits beside c serving and a serving.
    const inA = await begin(a);
    expect(m.book.loaded().sort()).toEqual(["a", "c"]);
    await expect(begin(b)).rejects.toMatchObject({ code: "insufficient_memory", message: expect.stringMatching(/b needs about 400 MiB, and this machine's loaded runtimes use 900 MiB of its 1000 MiB budget \(--memory-budget\), and none can be unloaded now: (a \(400 MiB\), c \(500 MiB\)|c \(500 MiB\), a \(400 MiB\))/) });
    const huge = m.stack("huge", 0, 1200 * MiB);
    await expect(begin(huge)).rejects.toMatchObject({ code: "insufficient_memory", message: "huge needs about 1.2 GiB, more than this machine's whole memory budget (--memory-budget, 1000 MiB)." });
    expect(m.made.huge).toBeUndefined();
    for (const [name, events] of [["a", inA], ["c", inC]] as const) {
      m.made[name]!.at(-1)!.finish();
      await drain(events);
    }
  });

  it("unloads after its idle time only, never while a request (even a long one) is in flight", async () => {
    const m = machine(0);
    const a = m.stack("a", 100);
    const inA = await begin(a);
    await new Promise((r) => setTimeout(r, 250));
    // Longer than the idle time, in flight: loaded.
    expect(a.isLoaded).toBe(true);
    m.made.a![0]!.finish();
    await drain(inA);
    await new Promise((r) => setTimeout(r, 50));
    expect(a.isLoaded).toBe(true);
    await new Promise((r) => setTimeout(r, 200));
    expect(a.isLoaded).toBe(false);
    expect(m.made.a![0]!.closed).toBe(true);
    // The next request loads it again.
    const again = await begin(a);
    expect(m.made.a).toHaveLength(2);
    m.made.a![1]!.finish();
    await drain(again);
  });

  it("shares one load among requests arriving while it loads, and a waiter leaving does not stop it", async () => {
    const m = machine(0);
    const a = m.stack("a");
    const leaving = new AbortController();
    const left = a.chat(INPUT, { signal: leaving.signal });
    const first = left.next();
    leaving.abort(new Error("the client left"));
    await expect(first).rejects.toThrow("the client left");
    const all = await Promise.all(Array.from({ length: 5 }, () => begin(a)));
    expect(m.made.a).toHaveLength(1);
    m.made.a![0]!.finish();
    await Promise.all(all.map(drain));
  });
});
