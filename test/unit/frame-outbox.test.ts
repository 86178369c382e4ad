import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CreditGate } from "../../agent/flow/index.js";
import { MakinaError } from "../../proto/index.js";
import { FrameOutbox } from "../../agent/runtimes/gguf/frame-outbox.js";
import { frameInterval, type ProcessFrame } from "../../agent/runtimes/gguf/gguf-wire.js";

/** An outbox whose writes are kept, each as the frames it held. */
function outbox(window: number, frameMs = 32) {
  const writes: ProcessFrame[][] = [];
  const gate = new CreditGate(window);
  const controller = new AbortController();
  const box = new FrameOutbox({
    write: (lines) => writes.push(lines.trimEnd().split("\n").map((l) => JSON.parse(l) as ProcessFrame)),
    gate,
    signal: controller.signal,
    frameMs: () => frameMs,
  });
  return { box, writes, gate, controller };
}

const text = (t: string) => ({ type: "text" as const, text: t });
const end: ProcessFrame = { type: "end", finishReason: "stop", promptTokens: 5, completionTokens: 4 };

describe("a GGUF model process's frames of one request", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("sends the first token at once, then what the interval gathered as one frame (the tokens are said once, by the end)", async () => {
    const { box, writes } = outbox(256);
    await box.add(text("Once"));
    expect(writes).toEqual([[{ type: "text", text: "Once" }]]);
    for (const t of [" upon", " a", " time"]) expect(box.add(text(t))).toBeUndefined();
    expect(writes).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(32);
    expect(writes[1]).toEqual([{ type: "text", text: " upon a time" }]);
  });

  it("sends a token that comes an interval or more after the last frame at once", async () => {
    const { box, writes } = outbox(256);
    await box.add(text("a"));
    await vi.advanceTimersByTimeAsync(40);
    await box.add(text("b"));
    expect(writes.map((w) => w.map((f) => (f as { text: string }).text))).toEqual([["a"], ["b"]]);
  });

  it("sends no frame of a token or two right after another: a tick within half an interval of the last frame is skipped", async () => {
    const { box, writes } = outbox(256);
    // On a tick of the shared clock, then the first token at once.
    await vi.advanceTimersByTimeAsync(32 - (performance.now() % 32));
    await box.add(text("a"));
    // 0.5 ms before the second tick after it, a token an interval or more after the last frame leaves at once.
    await vi.advanceTimersByTimeAsync(63.5);
    await box.add(text("b"));
    // Then one more, 0.3 ms before that tick: not sent at the tick, 0.5 ms after "b", but at the one after.
    await vi.advanceTimersByTimeAsync(0.3);
    expect(box.add(text("c"))).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(writes).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(31);
    expect(writes.map((w) => w.map((f) => (f as { text: string }).text))).toEqual([["a"], ["b"], ["c"]]);
  });

  it("puts what is held and the end in one write", async () => {
    const { box, writes } = outbox(256);
    await box.add(text("a"));
    box.add(text("b"));
    box.add(text("c"));
    await box.finish(end);
    expect(writes).toHaveLength(2);
    expect(writes[1]).toEqual([{ type: "text", text: "bc" }, end]);
    // The timer of the held frame is gone with it: nothing more is written.
    await vi.advanceTimersByTimeAsync(100);
    expect(writes).toHaveLength(2);
  });

  it("holds the decoder while no credit is left, and sends what came meanwhile once the reader returns some", async () => {
    const { box, writes, gate } = outbox(4);
    await box.add(text("abcd"));
    // The window is spent: the next event is not held for its tick; the decoder waits for credit at once.
    expect(box.add(text("e"))).toBeInstanceOf(Promise);
    await vi.advanceTimersByTimeAsync(32);
    let resumed = false;
    void box.add(text("f"))?.then(() => (resumed = true));
    await vi.advanceTimersByTimeAsync(100);
    expect(resumed).toBe(false);
    expect(writes).toHaveLength(1);
    gate.add(4);
    await vi.advanceTimersByTimeAsync(0);
    expect(resumed).toBe(true);
    expect(writes[1]).toMatchObject([{ type: "text", text: "ef" }]);
  });

  it("sends what is held before the error of a request that failed, in one write", async () => {
    const { box, writes } = outbox(256);
    await box.add(text("a"));
    box.add(text("b"));
    box.fail({ type: "error", code: "internal_error", message: "broke", param: null, retryAfterMs: null, promptTokens: 5, completionTokens: 2 });
    expect(writes[1]).toEqual([
      { type: "text", text: "b" },
      { type: "error", code: "internal_error", message: "broke", param: null, retryAfterMs: null, promptTokens: 5, completionTokens: 2 },
    ]);
    await vi.advanceTimersByTimeAsync(100);
    expect(writes).toHaveLength(2);
  });

  it("sends a frame larger than what is left of the window while any is left", async () => {
    const { box, writes } = outbox(2);
    await box.add(text("a much longer piece than the window"));
    expect(writes).toHaveLength(1);
  });

  it("gives up a frame waiting for credit when the request is canceled", async () => {
    const { box, writes, controller } = outbox(1);
    await box.add(text("ab"));
    await vi.advanceTimersByTimeAsync(32);
    const waiting = box.add(text("c"));
    controller.abort(new MakinaError("canceled", "The agent closed the request."));
    await expect(waiting).rejects.toMatchObject({ code: "canceled" });
    expect(writes).toHaveLength(1);
  });

  it("with an interval of 0, sends each event as it comes", async () => {
    const { box, writes } = outbox(256, 0);
    for (const t of ["a", "b", "c"]) await box.add(text(t));
    expect(writes).toHaveLength(3);
  });
});

describe("the interval of a model process's frames", () => {
  it("is the configured one for one or two requests, grows with more, up to 100 ms, and 0 stays 0", () => {
    expect([1, 2, 3, 4, 8, 64].map((n) => frameInterval(32, n))).toEqual([32, 32, 48, 64, 100, 100]);
    expect(frameInterval(0, 8)).toBe(0);
    expect(frameInterval(250, 8)).toBe(250);
  });
});
