import type { Llama } from "node-llama-cpp";
import { readdirSync, readlinkSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ggufAdapter } from "../../agent/runtimes/adapters/gguf-adapter.js";
import { createLlama } from "../../agent/runtimes/gguf/gguf-engine.js";
import { loadGgufModel, type GgufRuntime } from "../../agent/runtimes/gguf/gguf-runtime.js";
import { processHealth } from "../../agent/runtimes/gguf/process-health.js";
import type { RuntimeEvent } from "../../agent/runtimes/model-runtime.js";
import { silentLogger } from "../../proto/index.js";
import { testModelPath } from "../helpers/models.js";
import { drain, story } from "../helpers/story-input.js";


describe("a GGUF model decodes only as fast as its reader reads", () => {
  let llama: Llama;
  let runtime: GgufRuntime;
  beforeAll(async () => {
    llama = await createLlama({ threads: 1, gpu: false, log: silentLogger() });
    runtime = await loadGgufModel(llama, testModelPath(), { maxContextSize: 1024, sequences: 2, threads: 1 });
  });
  afterAll(async () => {
    await runtime?.close();
  });

  it("pauses a request whose reader stops, while another request on the same model runs to its end", async () => {
    const controller = new AbortController();
    const held = runtime.chat(story(600), { signal: controller.signal })[Symbol.asyncIterator]();
    expect((await held.next()).value).toMatchObject({ type: "text" });
    await vi.waitFor(() => expect(runtime.pausedRequests).toBe(1), { timeout: 10_000, interval: 5 });

    // The other sequence decodes a whole answer meanwhile; the held one decodes nothing more: stopped now, it
    // used only what it decoded before it paused.
    const other = await drain(runtime.chat(story(300))[Symbol.asyncIterator]());
    expect(other.at(-1)).toMatchObject({ type: "end", finishReason: "length", usage: { completionTokens: 300 } });
    expect(runtime.pausedRequests).toBe(1);
    controller.abort();
    const stopped = (await drain(held)).at(-1);
    expect(stopped).toMatchObject({ type: "stopped", error: { code: "canceled" } });
    expect((stopped as { usage: { completionTokens: number } }).usage.completionTokens).toBeLessThan(20);

    // A paused request read again resumes, and runs to its full length.
    const resumed = runtime.chat(story(600))[Symbol.asyncIterator]();
    await resumed.next();
    await vi.waitFor(() => expect(runtime.pausedRequests).toBe(1), { timeout: 10_000, interval: 5 });
    const rest = await drain(resumed);
    expect(rest.at(-1)).toMatchObject({ type: "end", finishReason: "length", usage: { completionTokens: 600 } });
    expect(runtime.pausedRequests).toBe(0);
  });

  it("frees the sequence at once when a paused request is abandoned", async () => {
    const controller = new AbortController();
    const held = runtime.chat(story(600), { signal: controller.signal })[Symbol.asyncIterator]();
    await held.next();
    await vi.waitFor(() => expect(runtime.pausedRequests).toBe(1), { timeout: 10_000, interval: 5 });
    controller.abort();
    expect((await drain(held)).at(-1)).toMatchObject({ type: "stopped", error: { code: "canceled" } });
    // Both sequences serve again.
    const [a, b] = await Promise.all([drain(runtime.chat(story(5))[Symbol.asyncIterator]()), drain(runtime.chat(story(5))[Symbol.asyncIterator]())]);
    expect(a.at(-1)).toMatchObject({ type: "end", usage: { completionTokens: 5 } });
    expect(b.at(-1)).toMatchObject({ type: "end", usage: { completionTokens: 5 } });
  });
});

describe("a GGUF model process decodes only as far as the agent's credit reaches", () => {
  // With the default interval, and with one so long that only a spent credit can make it send (and stop).
  it.each([undefined, 60_000])("pauses the decoder of a request whose caller stops pulling, and finishes it when the caller reads on (stream interval %s)", async (streamIntervalMs) => {
    const adapter = ggufAdapter({ threads: 1, maxContextSize: 1024, sequences: 1, gpu: false, streamIntervalMs });
    const runtime = await adapter.start({ modelId: "paced", ref: testModelPath(), path: testModelPath() }, { runtimesDir: "/nonexistent", python: "python3", log: silentLogger() });
    const socketPath = runtime.endpoint.replace(/^unix:/, "");
    try {
      expect(await processHealth(socketPath)).toEqual({ contextSize: 1024, pausedRequests: 0, memoryBytes: expect.any(Number) });
      const held = runtime.chat(story(600))[Symbol.asyncIterator]();
      await held.next();
      await vi.waitFor(async () => expect((await processHealth(socketPath)).pausedRequests).toBe(1), { timeout: 10_000, interval: 20 });
      const rest = await drain(held);
      expect(rest.at(-1)).toMatchObject({ type: "end", finishReason: "length", usage: { completionTokens: 600 } });
      expect((await processHealth(socketPath)).pausedRequests).toBe(0);
    } finally {
      await runtime.close();
    }
  });
});

describe("the agent's connections to a GGUF model process", () => {
  /** The sockets a process has open (by inode: a new connection is a new one). */
  const socketsOf = (pid: number) =>
    readdirSync(`/proc/${pid}/fd`)
      .map((fd) => {
        try {
          return readlinkSync(`/proc/${pid}/fd/${fd}`);
        } catch {
          return ""; // closed meanwhile
        }
      })
      .filter((link) => link.startsWith("socket:"))
      .sort();
  const textOf = (events: RuntimeEvent[]) => events.map((e) => (e.type === "text" ? e.text : "")).join("");

  it("are kept open from request to request, and a canceled or refused request leaves nothing the next one reads", async () => {
    const adapter = ggufAdapter({ threads: 1, maxContextSize: 1024, sequences: 2, gpu: false });
    const runtime = await adapter.start({ modelId: "kept", ref: testModelPath(), path: testModelPath() }, { runtimesDir: "/nonexistent", python: "python3", log: silentLogger() });
    try {
      const pid = runtime.pid!;
      /** Sockets of the model process in `after` that were not in `before`: connections opened meanwhile. */
      const opened = (before: string[], after: string[]) => after.filter((s) => !before.includes(s));
      const s0 = socketsOf(pid);
      const first = await drain(runtime.chat(story(40))[Symbol.asyncIterator]());
      expect(first.at(-1)).toMatchObject({ type: "end", usage: { completionTokens: 40 } });
      const firstOn = opened(s0, socketsOf(pid));
      for (let i = 0; i < 5; i++) expect(textOf(await drain(runtime.chat(story(40))[Symbol.asyncIterator]()))).toBe(textOf(first));
      // The first request's connection served them all: it is still open (connected per request, it would be
      // closed; a health check's connection that came and went meanwhile is neither here nor there).
      expect(firstOn.some((s) => socketsOf(pid).includes(s))).toBe(true);

      // Canceled while its frames come (on that connection): the process is asked to stop, and says what the
      // request used (its `stopped` frame); the connection is kept, and the model frees its sequence.
      const controller = new AbortController();
      const canceled = runtime.chat(story(600), { signal: controller.signal })[Symbol.asyncIterator]();
      await canceled.next();
      controller.abort();
      const stopped = (await drain(canceled)).at(-1);
      expect(stopped).toMatchObject({ type: "stopped", error: { code: "canceled" } });
      const used = (stopped as { usage: { promptTokens: number; completionTokens: number } }).usage;
      expect(used.promptTokens).toBeGreaterThan(0);
      expect(used.completionTokens).toBeGreaterThan(0);
      expect(used.completionTokens).toBeLessThan(600);
      expect(firstOn.some((s) => socketsOf(pid).includes(s))).toBe(true);
      // Left at its first frame by a caller that stops reading (on a new connection): closed too.
      const left = runtime.chat(story(600))[Symbol.asyncIterator]();
      await left.next();
      await left.return!(undefined);
      // Refused by the model process (an error frame), on a new connection: it is kept, and serves the next request.
      const t0 = socketsOf(pid);
      const tooLong = { ...story(10), messages: [{ role: "user" as const, content: "word ".repeat(3000) }] };
      expect((await drain(runtime.chat(tooLong)[Symbol.asyncIterator]())).at(-1)).toMatchObject({ type: "stopped", error: { code: "context_length_exceeded" } });
      const refusedOn = opened(t0, socketsOf(pid));
      expect(textOf(await drain(runtime.chat(story(40))[Symbol.asyncIterator]()))).toBe(textOf(first));
      expect(refusedOn.some((s) => socketsOf(pid).includes(s))).toBe(true);

      // Whatever connection each gets, two at once and one after give the same answer as before, nothing else.
      const [a, b] = await Promise.all([drain(runtime.chat(story(40))[Symbol.asyncIterator]()), drain(runtime.chat(story(40))[Symbol.asyncIterator]())]);
      expect([textOf(a), textOf(b)]).toEqual([textOf(first), textOf(first)]);
      expect(textOf(await drain(runtime.chat(story(40))[Symbol.asyncIterator]()))).toBe(textOf(first));
      expect(await processHealth(runtime.endpoint.replace(/^unix:/, ""))).toMatchObject({ pausedRequests: 0 });
    } finally {
      await runtime.close();
    }
  });
});
