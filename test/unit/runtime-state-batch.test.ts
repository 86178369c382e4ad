import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_STATES_PER_WRITE, RuntimeStateBatch } from "../../relay/link/runtime-state-batch.js";

describe("the runtime states a link's agent reports, on their way to the database", () => {
  afterEach(() => vi.useRealTimers());

  it("are written 16 stacks at most every 250 ms, however many stacks a machine flips, each stack's latest state kept", () => {
    vi.useFakeTimers();
    const written: string[] = [];
    const batch = new RuntimeStateBatch((stackId, state) => written.push(`${stackId}:${state}`));
    // 40 stacks flipped ten times each in one go: the database sees each stack's last word once.
    for (let round = 0; round < 10; round++) for (let i = 0; i < 40; i++) batch.received(`stk_${i}`, round % 2 ? "ready" : "failed", null);
    vi.advanceTimersByTime(0);
    expect(MAX_STATES_PER_WRITE).toBe(16);
    expect(written).toHaveLength(16);
    vi.advanceTimersByTime(249);
    expect(written).toHaveLength(16);
    vi.advanceTimersByTime(1);
    expect(written).toHaveLength(32);
    vi.advanceTimersByTime(250);
    expect(written).toHaveLength(40);
    expect(new Set(written)).toEqual(new Set(Array.from({ length: 40 }, (_, i) => `stk_${i}:ready`)));
    vi.advanceTimersByTime(10_000);
    expect(written).toHaveLength(40);
    batch.close();
  });

  it("writes every stack's last word when the link ends, even those still waiting their turn", () => {
    vi.useFakeTimers();
    const written: string[] = [];
    const batch = new RuntimeStateBatch((stackId, state) => written.push(`${stackId}:${state}`));
    for (let i = 0; i < 40; i++) batch.received(`stk_${i}`, "loading", null);
    vi.advanceTimersByTime(0);
    batch.close();
    expect(written).toHaveLength(40);
    vi.advanceTimersByTime(10_000);
    expect(written).toHaveLength(40);
  });

  it("writes the context a load ended with, even when an unload took that load's place before its turn", () => {
    vi.useFakeTimers();
    const written: string[] = [];
    const batch = new RuntimeStateBatch((stackId, state, _error, contextSize) => written.push(`${stackId}:${state}:${contextSize ?? "-"}`));
    batch.received("stk_a", "loading", null);
    vi.advanceTimersByTime(0);
    // Loaded with a context of 4096 tokens, and unloaded again within the same 250 ms.
    batch.received("stk_a", "ready", null, 4096);
    batch.received("stk_a", "unloading", null);
    batch.received("stk_a", "unloaded", null);
    vi.advanceTimersByTime(250);
    expect(written).toEqual(["stk_a:loading:-", "stk_a:unloaded:4096"]);
    // Written once: the next state says nothing of a context.
    batch.received("stk_a", "loading", null);
    vi.advanceTimersByTime(250);
    expect(written.at(-1)).toBe("stk_a:loading:-");
    // A context is taken with `ready` only, and only as a whole number of tokens the database holds.
    for (const [state, said] of [["unloaded", 512], ["ready", 2 ** 40], ["ready", 1.5], ["ready", -1]] as const) {
      batch.received("stk_a", "loading", null);
      vi.advanceTimersByTime(250);
      batch.received("stk_a", state, null, said);
      vi.advanceTimersByTime(250);
      expect(written.slice(-2)).toEqual(["stk_a:loading:-", `stk_a:${state}:-`]);
    }
    batch.close();
  });
});
