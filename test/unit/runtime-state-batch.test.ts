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
});
