import { describe, expect, it } from "vitest";
import { MakinaError } from "../../proto/index.js";
import { AdmissionGate } from "../../relay/routing/index.js";

const limits = { maxInFlightPerStack: 2, maxInFlightPerMachine: 3, maxQueuePerStack: 2, queueTimeoutMs: 60_000 };

describe("admission of requests to stacks and machines", () => {
  it("lets requests run up to the stack's limit, queues the next ones in order, and refuses beyond the queue", async () => {
    const gate = new AdmissionGate(limits);
    const a = gate.tryEnter("s1", "m1")!;
    const b = gate.tryEnter("s1", "m1")!;
    expect([a, b].every(Boolean)).toBe(true);
    expect(gate.tryEnter("s1", "m1")).toBeNull();
    const order: string[] = [];
    const c = gate.wait("s1", "m1").then((t) => (order.push("c"), t));
    const d = gate.wait("s1", "m1").then((t) => (order.push("d"), t));
    await expect(gate.wait("s1", "m1")).rejects.toMatchObject({ code: "runtime_unavailable", retryAfterMs: 1000, message: "The model is at capacity: 2 requests running and 2 waiting. Retry shortly." });
    expect(gate.load("s1")).toEqual({ inFlight: 2, waiting: 2 });
    a.release();
    a.release(); // once only
    const tc = await c;
    expect([order, gate.load("s1")]).toEqual([["c"], { inFlight: 2, waiting: 1 }]);
    // A new request does not jump the queue while someone waits.
    b.release();
    expect(gate.tryEnter("s1", "m1")).toBeNull();
    const td = await d;
    expect(order).toEqual(["c", "d"]);
    tc.release();
    td.release();
    expect([gate.load("s1"), gate.waiting]).toEqual([{ inFlight: 0, waiting: 0 }, 0]);
  });

  it("holds a machine's stacks together to the machine's limit, letting the next waiting stack in as one finishes", async () => {
    const gate = new AdmissionGate(limits);
    const held = [gate.tryEnter("s1", "m1")!, gate.tryEnter("s1", "m1")!, gate.tryEnter("s2", "m1")!];
    expect(gate.tryEnter("s2", "m1")).toBeNull();
    expect(gate.tryEnter("s3", "m2")).not.toBeNull(); // another machine is not affected
    const waiting = gate.wait("s2", "m1");
    held[0]!.release();
    (await waiting).release();
    expect(gate.load("s2")).toEqual({ inFlight: 1, waiting: 0 });
  });

  it("ends a wait at the queue's time limit, or when the client leaves, and forgets it", async () => {
    const gate = new AdmissionGate({ ...limits, maxInFlightPerStack: 1, queueTimeoutMs: 30 });
    const held = gate.tryEnter("s1", "m1")!;
    await expect(gate.wait("s1", "m1")).rejects.toMatchObject({ code: "runtime_unavailable", retryAfterMs: 5000, message: "The model stayed at capacity for 0.0 s while this request waited. Retry shortly." });
    const controller = new AbortController();
    const left = gate.wait("s1", "m1", controller.signal);
    controller.abort(new MakinaError("canceled", "The client closed the connection."));
    await expect(left).rejects.toMatchObject({ code: "canceled" });
    expect([gate.load("s1"), gate.waiting]).toEqual([{ inFlight: 1, waiting: 0 }, 0]);
    held.release();
    expect(gate.load("s1")).toEqual({ inFlight: 0, waiting: 0 });
  });
});
