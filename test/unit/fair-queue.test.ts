import { describe, expect, it, vi } from "vitest";
import { FairQueue } from "../../proto/index.js";
import { AdmissionGate } from "../../relay/routing/index.js";
import { SlotPool } from "../../agent/runtimes/slot-pool.js";

/** Takes every item in the queue's order, at time `now`. */
const drain = <T>(q: FairQueue<T>, now = 0): T[] => {
  const out: T[] = [];
  for (let e = q.shift(now); e; e = q.shift(now)) out.push(e.item);
  return out;
};

describe("the fair queue: by service tier, keys taking turns, aged", () => {
  it("serves priority before default before flex, whatever came first", () => {
    const q = new FairQueue<string>(60_000);
    q.push("flex-1", "flex", "a", 0);
    q.push("default-1", "default", "a", 1);
    q.push("priority-1", "priority", "a", 2);
    q.push("flex-2", "flex", "a", 3);
    expect(drain(q, 10)).toEqual(["priority-1", "default-1", "flex-1", "flex-2"]);
  });

  it("lets a key with 1 waiting in after one turn of a key with 1,000 waiting", () => {
    const q = new FairQueue<string>(60_000);
    for (let i = 0; i < 1000; i++) q.push(`big-${i}`, "default", "big", i);
    q.push("small", "default", "small", 1000);
    const order = drain(q, 2000);
    expect(order.indexOf("small")).toBe(1);
    // Each key's own requests keep their order.
    expect(order.filter((x) => x.startsWith("big")).slice(0, 3)).toEqual(["big-0", "big-1", "big-2"]);
  });

  it("takes turns between three keys in a ring", () => {
    const q = new FairQueue<string>(60_000);
    for (const k of ["a", "b", "c"]) for (let i = 0; i < 2; i++) q.push(`${k}${i}`, "flex", k, 0);
    expect(drain(q)).toEqual(["a0", "b0", "c0", "a1", "b1", "c1"]);
  });

  it("ranks a waiting request one tier higher per ageing period, then serves it within one turn of each key at that rank", () => {
    const q = new FairQueue<string>(1000);
    q.push("old-flex", "flex", "batch", 0);
    q.push("d1", "default", "chat", 900);
    q.push("d2", "default", "chat", 950);
    // At 999 ms the flex request is still flex.
    expect(q.peek(999)).toMatchObject({ item: "d1", rank: 1 });
    // At 1,000 ms it ranks as default: its key joins the ring after the one waiting there.
    expect(drain(q, 1000)).toEqual(["d1", "old-flex", "d2"]);

    q.push("old-flex", "flex", "batch", 0);
    q.push("p1", "priority", "chat", 1999);
    q.push("p2", "priority", "chat", 1999);
    // At 2,000 ms (two periods) it ranks as priority.
    expect(drain(q, 2000)).toEqual(["p1", "old-flex", "p2"]);
  });

  it("is never starved: under a continuous default load, a flex request goes within two ageing periods and one turn", () => {
    const q = new FairQueue<string>(1000);
    q.push("flex", "flex", "batch", 0);
    let served: string | undefined;
    let n = 0;
    // One default request arrives and one is served every 10 ms, from several keys.
    for (let now = 0; now < 10_000 && served !== "flex"; now += 10) {
      q.push(`d${n}`, "default", `k${n % 3}`, now);
      n++;
      served = q.shift(now)!.item;
      if (served === "flex") expect(now).toBeLessThanOrEqual(1000 + 3 * 10);
    }
    expect(served).toBe("flex");
  });

  it("names the newest of the lowest tier below an arriving one, and removes an entry once", () => {
    const q = new FairQueue<string>(60_000);
    const a = q.push("flex-old", "flex", "a", 0);
    q.push("flex-new", "flex", "b", 5);
    q.push("default", "default", "a", 6);
    expect(q.newestBelow("priority")!.item).toBe("flex-new");
    expect(q.newestBelow("default")!.item).toBe("flex-new");
    expect(q.newestBelow("flex")).toBeUndefined();
    expect([q.remove(a), q.remove(a), q.size]).toEqual([true, false, 2]);
  });
});

describe("admission by tier", () => {
  const limits = { maxInFlightPerStack: 1, maxInFlightPerMachine: 10, maxQueuePerStack: 3, queueTimeoutMs: 60_000, flexQueueTimeoutMs: 120_000 };

  it("lets a priority request in before flex ones that waited longer, and a full queue drops its newest flex for an arriving priority", async () => {
    const gate = new AdmissionGate(limits);
    const running = gate.tryEnter("s", "m")!;
    const order: string[] = [];
    const wait = (name: string, tier: "priority" | "default" | "flex", owner: string) =>
      gate.wait("s", "m", undefined, { tier, owner }).then(
        (t) => (order.push(name), t),
        (err: { message: string; retryAfterMs: number }) => (order.push(`${name} refused`), { err }),
      );
    const f1 = wait("flex-1", "flex", "batch");
    const f2 = wait("flex-2", "flex", "batch");
    const f3 = wait("flex-3", "flex", "batch");
    // The queue is full of flex: a priority request takes the newest's place, which is refused at once.
    const p = wait("priority", "priority", "chat");
    expect((await f3) as unknown).toEqual({ err: expect.objectContaining({ retryAfterMs: 1000, message: "The model is at capacity, and a request of a higher service tier took this one's place in its queue. Retry shortly." }) });
    // A flex request arriving at a full queue has nothing below it to displace: refused.
    await expect(gate.wait("s", "m", undefined, { tier: "flex", owner: "batch" })).rejects.toMatchObject({ code: "runtime_unavailable", message: "The model is at capacity: 1 requests running and 3 waiting. Retry shortly." });
    running.release();
    (await p as { release(): void }).release();
    (await f1 as { release(): void }).release();
    (await f2 as { release(): void }).release();
    expect(order).toEqual(["flex-3 refused", "priority", "flex-1", "flex-2"]);
    expect(gate.waiting).toBe(0);
  });

  it("gives a flex request the longer wait, and a machine at its limit lets in the best ranked request of all its stacks", async () => {
    const gate = new AdmissionGate({ ...limits, maxInFlightPerMachine: 1, queueTimeoutMs: 20, flexQueueTimeoutMs: 60_000 });
    const running = gate.tryEnter("s1", "m")!;
    const flex = gate.wait("s1", "m", undefined, { tier: "flex", owner: "a" });
    await expect(gate.wait("s2", "m", undefined, { tier: "default", owner: "b" })).rejects.toMatchObject({ message: "The model stayed at capacity for 0.0 s while this request waited. Retry shortly." });
    const priority = gate.wait("s2", "m", undefined, { tier: "priority", owner: "b" });
    running.release();
    // s2's priority request goes first, though s1's flex one waited longer.
    (await priority).release();
    (await flex).release();
    expect(gate.waiting).toBe(0);
  });
});

describe("places kept for the tiers above flex", () => {
  it("lets flex requests hold three quarters of a stack's places, so a default request starts at once beside them", async () => {
    const gate = new AdmissionGate({ maxInFlightPerStack: 4, maxInFlightPerMachine: 100, maxQueuePerStack: 10, queueTimeoutMs: 60_000 });
    const flex = [gate.tryEnter("s", "m", true), gate.tryEnter("s", "m", true), gate.tryEnter("s", "m", true)];
    expect(flex.every(Boolean)).toBe(true);
    expect(gate.tryEnter("s", "m", true)).toBeNull();
    const waiting = gate.wait("s", "m", undefined, { tier: "flex", owner: "batch" });
    // The flex request waits for a flex place; a default one behind it goes in at once.
    const urgent = await gate.wait("s", "m", undefined, { tier: "default", owner: "chat" });
    expect(gate.load("s")).toEqual({ inFlight: 4, waiting: 1 });
    urgent.release();
    expect(gate.load("s")).toEqual({ inFlight: 3, waiting: 1 });
    flex[0]!.release();
    (await waiting).release();
    for (const f of flex.slice(1)) f!.release();
    expect(gate.load("s")).toEqual({ inFlight: 0, waiting: 0 });
  });

  it("keeps one of a GGUF model's two sequences from flex requests: a priority request takes it at once", async () => {
    const pool = new SlotPool(["s1", "s2"]);
    const first = await pool.acquire(undefined, { tier: "flex", owner: "batch" });
    let second: string | undefined;
    void pool.acquire(undefined, { tier: "flex", owner: "batch" }).then((s) => (second = s));
    await new Promise((r) => setImmediate(r));
    expect([second, pool.waiting]).toEqual([undefined, 1]);
    const urgent = await pool.acquire(undefined, { tier: "priority", owner: "chat" });
    expect(urgent).not.toBe(first);
    // The flex sequence freed goes to the waiting flex request.
    pool.release(first);
    await vi.waitFor(() => expect(second).toBe(first));
  });
});

describe("a runtime's slots by tier", () => {
  it("hands a freed slot to the best ranked waiting request, keys taking turns", async () => {
    const pool = new SlotPool(["seq"]);
    const first = await pool.acquire();
    const order: string[] = [];
    const granted = new Map<string, Promise<string>>();
    const ask = (name: string, tier: "priority" | "default" | "flex", owner: string) => granted.set(name, pool.acquire(undefined, { tier, owner }).then((slot) => (order.push(name), slot)));
    ask("flex-a", "flex", "a");
    ask("default-a1", "default", "a");
    ask("default-a2", "default", "a");
    ask("default-b", "default", "b");
    ask("priority-c", "priority", "c");
    expect(pool.waiting).toBe(5);
    // Each holder in turn gives the one sequence back: the pool says who has it next.
    pool.release(first);
    for (let served = 0; served < 5; served++) {
      await vi.waitFor(() => expect(order).toHaveLength(served + 1));
      pool.release(await granted.get(order[served]!)!);
    }
    expect(order).toEqual(["priority-c", "default-a1", "default-b", "default-a2", "flex-a"]);
  });
});
