import { describe, expect, it } from "vitest";
import { Backoff } from "../../agent/flow/backoff.js";
import { CreditGate } from "../../agent/flow/credit-gate.js";
import { SlotPool } from "../../agent/runtimes/slot-pool.js";
import { MakinaError } from "../../proto/index.js";

describe("reconnect backoff", () => {
  it("doubles up to the cap, with full jitter between the minimum and the ceiling", () => {
    const top = new Backoff({ minMs: 100, maxMs: 1000, random: () => 0.999999 });
    expect(Array.from({ length: 6 }, () => top.next())).toEqual([100, 200, 400, 800, 1000, 1000]);
    const bottom = new Backoff({ minMs: 100, maxMs: 1000, random: () => 0 });
    expect(Array.from({ length: 4 }, () => bottom.next())).toEqual([100, 100, 100, 100]);
  });

  it("starts over after a successful connection", () => {
    const b = new Backoff({ minMs: 10, maxMs: 1000, random: () => 0.999999 });
    b.next();
    b.next();
    b.reset();
    expect(b.next()).toBe(10);
  });
});

describe("credit gate", () => {
  it("lets a chunk through only against a credit", async () => {
    const gate = new CreditGate(1);
    const signal = new AbortController().signal;
    await gate.take(signal);
    let passed = false;
    const waiting = gate.take(signal).then(() => (passed = true));
    await Promise.resolve();
    expect(passed).toBe(false);
    gate.add(1);
    await waiting;
    expect(passed).toBe(true);
  });

  it("gives up when the request is aborted", async () => {
    const gate = new CreditGate(0);
    const c = new AbortController();
    const waiting = gate.take(c.signal);
    c.abort(new MakinaError("canceled", "client gone"));
    await expect(waiting).rejects.toMatchObject({ code: "canceled" });
  });
});

describe("slot pool", () => {
  it("hands slots out first come first served and to waiters on release", async () => {
    const pool = new SlotPool(["a"]);
    const first = await pool.acquire();
    const order: string[] = [];
    const w1 = pool.acquire().then((s) => order.push(`w1:${s}`));
    const w2 = pool.acquire().then((s) => order.push(`w2:${s}`));
    expect(pool.waiting).toBe(2);
    pool.release(first);
    await w1;
    pool.release("a");
    await w2;
    expect(order).toEqual(["w1:a", "w2:a"]);
  });

  it("drops a waiter whose request is aborted", async () => {
    const pool = new SlotPool<string>([]);
    const c = new AbortController();
    const waiting = pool.acquire(c.signal);
    c.abort();
    await expect(waiting).rejects.toMatchObject({ code: "canceled" });
    expect(pool.waiting).toBe(0);
  });
});
