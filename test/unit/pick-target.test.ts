import { describe, expect, it } from "vitest";
import { pickTarget, type RoutableSession } from "../../relay/routing/route-request.js";
import type { Stack } from "../../relay/store/index.js";

const stack = (id: string, machineId: string) => ({ id, machineId }) as Stack;
const session = (o: Partial<RoutableSession> & { ready: string[]; unloaded?: string[]; free?: number; slot?: boolean; perStack?: Record<string, number> }): RoutableSession => ({
  state: "open",
  roomToLoad: () => ({ slot: o.slot ?? true, bytes: o.free ?? Infinity }),
  readyStacks: new Set(o.ready),
  inFlight: o.inFlight ?? 0,
  congested: o.congested ?? false,
  loaded: (id) => o.ready.includes(id) && !o.unloaded?.includes(id),
  inFlightFor: (id) => o.perStack?.[id] ?? 0,
});
const registryOf = (sessions: Record<string, RoutableSession>) => ({ get: (id: string) => sessions[id] });

describe("picking the machine that serves a request", () => {
  const stacks = [stack("s1", "m1"), stack("s2", "m2"), stack("s3", "m3")];

  it("takes the ready machine with the fewest requests in flight", () => {
    const registry = registryOf({ m1: session({ ready: ["s1"], inFlight: 3 }), m2: session({ ready: ["s2"], inFlight: 1 }), m3: session({ ready: [], inFlight: 0 }) });
    expect(pickTarget(registry, stacks).stack.id).toBe("s2");
  });

  it("avoids a machine whose link is not draining, however idle it looks", () => {
    const registry = registryOf({ m1: session({ ready: ["s1"], inFlight: 5 }), m2: session({ ready: ["s2"], inFlight: 0, congested: true }) });
    expect(pickTarget(registry, stacks).stack.id).toBe("s1");
  });

  it("answers 503 with a short Retry-After when only congested machines are left", () => {
    const registry = registryOf({ m2: session({ ready: ["s2"], congested: true }) });
    expect(() => pickTarget(registry, stacks)).toThrow(expect.objectContaining({ code: "runtime_unavailable", retryAfterMs: 1000 }));
  });

  it("tells a runtime still loading from every machine being offline", () => {
    expect(() => pickTarget(registryOf({ m1: session({ ready: [] }) }), stacks)).toThrow(expect.objectContaining({ code: "runtime_unavailable" }));
    expect(() => pickTarget(registryOf({}), stacks)).toThrow(expect.objectContaining({ code: "machine_offline" }));
  });

  it("shares requests between equal replicas in turn, two on one machine included", () => {
    const replicas = [stack("s1", "m1"), stack("s2", "m1"), stack("s3", "m2")];
    const registry = registryOf({ m1: session({ ready: ["s1", "s2"], inFlight: 0 }), m2: session({ ready: ["s3"], inFlight: 1 }) });
    expect([0, 1, 2, 3].map((turn) => pickTarget(registry, replicas, turn).stack.id)).toEqual(["s1", "s2", "s1", "s2"]);
  });

  it("prefers a replica whose model is loaded, however busy, to one that must load it first", () => {
    const replicas = [stack("s1", "m1"), stack("s2", "m2")];
    const registry = registryOf({ m1: session({ ready: ["s1"], unloaded: ["s1"], inFlight: 0 }), m2: session({ ready: ["s2"], inFlight: 7 }) });
    expect(pickTarget(registry, replicas).stack.id).toBe("s2");
    // None loaded: the idlest machine loads it.
    const cold = registryOf({ m1: session({ ready: ["s1"], unloaded: ["s1"], inFlight: 3 }), m2: session({ ready: ["s2"], unloaded: ["s2"], inFlight: 1 }) });
    expect(pickTarget(cold, replicas).stack.id).toBe("s2");
  });

  it("loads a model on the machine whose memory budget has the most left free, busy or not", () => {
    const replicas = [stack("s1", "m1"), stack("s2", "m2"), stack("s3", "m3")];
    const GiB = 1024 ** 3;
    const registry = registryOf({
      m1: session({ ready: ["s1"], unloaded: ["s1"], inFlight: 0, free: 2 * GiB }),
      m2: session({ ready: ["s2"], unloaded: ["s2"], inFlight: 4, free: 9 * GiB }),
      m3: session({ ready: ["s3"], unloaded: ["s3"], inFlight: 0, free: 5 * GiB }),
    });
    expect(pickTarget(registry, replicas).stack.id).toBe("s2");
    // A loaded replica still comes first, whatever the others have free.
    const warm = registryOf({ m1: session({ ready: ["s1"], free: 0 }), m2: session({ ready: ["s2"], unloaded: ["s2"], free: 9 * GiB }) });
    expect(pickTarget(warm, replicas).stack.id).toBe("s1");
    // A machine with a place free under its --max-loaded before one that must unload a model for it, however much memory.
    const full = registryOf({ m1: session({ ready: ["s1"], unloaded: ["s1"], free: 20 * GiB, slot: false }), m2: session({ ready: ["s2"], unloaded: ["s2"], free: GiB }) });
    expect(pickTarget(full, replicas).stack.id).toBe("s2");
    // One that has said nothing of its memory (an older agent) comes after one that has some free.
    const silent: RoutableSession = { ...session({ ready: ["s1"], unloaded: ["s1"] }), roomToLoad: undefined };
    expect(pickTarget(registryOf({ m1: silent, m2: session({ ready: ["s2"], unloaded: ["s2"], free: GiB }) }), replicas).stack.id).toBe("s2");
  });
});

describe("picking the replica that holds a prompt (rendezvous hashing)", () => {
  const replicas = [stack("s1", "m1"), stack("s2", "m1"), stack("s3", "m2")];
  const idle = (perStack: Record<string, number> = {}) => registryOf({ m1: session({ ready: ["s1", "s2"], perStack }), m2: session({ ready: ["s3"], perStack }) });
  const home = (affinity: number) => pickTarget(idle(), replicas, 0, () => affinity, () => 0).stack.id;

  it("sends one affinity to one replica whatever the turn, and different ones over all replicas", () => {
    expect(new Set([0, 1, 2, 3].map((turn) => pickTarget(idle(), replicas, turn, () => 42, () => 0).stack.id)).size).toBe(1);
    expect(new Set(Array.from({ length: 60 }, (_, i) => home(i * 7919))).size).toBe(3);
  });

  it("passes over a replica 25% above the replicas' average, by its own count when every machine is this relay's", () => {
    const affinity = [...Array(100).keys()].find((a) => home(a) === "s1")!;
    // s1 with 2 on its machine's link, its machine-mate s2 none: the machine's count is the same for both, their own are not.
    expect(pickTarget(idle({ s1: 2 }), replicas, 0, () => affinity, () => 0).stack.id).not.toBe("s1");
    // The same with 2 waiting for s1 at this relay's admission.
    expect(pickTarget(idle(), replicas, 0, () => affinity, (id) => (id === "s1" ? 2 : 0)).stack.id).not.toBe("s1");
    // Loads of zero, or all alike, keep it home.
    expect(pickTarget(idle(), replicas, 0, () => affinity, () => 3).stack.id).toBe("s1");
    expect(pickTarget(idle({ s1: 1, s2: 1, s3: 1 }), replicas, 0, () => affinity, () => 0).stack.id).toBe("s1");
  });

  it("keeps a replica exactly 25% above the average, and passes over one above that", () => {
    const affinity = [...Array(100).keys()].find((a) => home(a) === "s1")!;
    // Average 4: s1 at 5 is 1.25 times it and stays home; at 6 (1.5 times) it is passed over for the next in its order.
    expect(pickTarget(idle({ s1: 5, s2: 4, s3: 3 }), replicas, 0, () => affinity, () => 0).stack.id).toBe("s1");
    expect(pickTarget(idle({ s1: 6, s2: 4, s3: 2 }), replicas, 0, () => affinity, () => 0).stack.id).not.toBe("s1");
  });

  it("counts machines, for every replica, when one is linked to another relay", () => {
    const affinity = [...Array(100).keys()].find((a) => home(a) === "s3")!;
    const remote = { ...session({ ready: ["s3"], inFlight: 4 }), admittedWhereLinked: true };
    const registry = registryOf({ m1: session({ ready: ["s1", "s2"], inFlight: 0 }), m2: remote });
    // Its own stack idle here (this relay admitted none of it), but its machine busy: passed over.
    expect(pickTarget(registry, replicas, 0, () => affinity, () => 0).stack.id).not.toBe("s3");
  });
});
