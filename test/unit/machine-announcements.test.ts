import { describe, expect, it } from "vitest";
import { silentLogger } from "../../proto/index.js";
import type { AgentRegistry, Room } from "../../relay/link/index.js";
import type { AdmissionGate } from "../../relay/routing/index.js";
import { pickTarget, type RoutableSession } from "../../relay/routing/route-request.js";
import type { Stack } from "../../relay/store/index.js";
import type { FleetBus } from "../../relay/cluster/fleet-bus.js";
import { HopServer } from "../../relay/cluster/hop-server.js";
import { RemoteMachines } from "../../relay/cluster/remote-machines.js";

/**
 * NATS standing in, in memory: what one relay publishes reaches every subscriber, said to come from that relay
 * (as the bus's seal tells it); the largest message is kept.
 */
function memoryBus() {
  const subscribers: { subject: string; handler: (m: unknown, subject: string, sender: string) => void }[] = [];
  let largest = 0;
  const matches = (pattern: string, subject: string) => (pattern.endsWith(".*") ? subject.startsWith(pattern.slice(0, -1)) : pattern === subject);
  const dropped: string[] = [];
  const busOf = (relay: string) =>
    ({
      connected: true,
      maxPayload: 1024 * 1024,
      publish(subject: string, message: unknown) {
        const text = JSON.stringify(message);
        largest = Math.max(largest, Buffer.byteLength(text));
        for (const s of subscribers) if (matches(s.subject, subject)) s.handler(JSON.parse(text), subject, relay);
        return true;
      },
      subscribe(subject: string, handler: (m: unknown, subject: string, sender: string) => void) {
        subscribers.push({ subject, handler });
      },
      drop(why: string) {
        dropped.push(why);
      },
    }) as unknown as FleetBus;
  return { busOf, largest: () => largest, dropped };
}

describe("a relay's announcement of the machines it holds", () => {
  it("reaches the other relays whole with 12,000 machines, in messages far under NATS's 1 MiB limit", () => {
    const { busOf, largest, dropped } = memoryBus();
    const sessions = Array.from({ length: 12_000 }, (_, i) => ({ machineId: `mach_${String(i).padStart(16, "0")}`, state: "open", inFlight: i % 3, congested: false, readyStacks: new Set([`stk_${String(i).padStart(16, "0")}`]), loaded: () => true }));
    const registry = { all: () => sessions } as unknown as AgentRegistry;
    const other = new RemoteMachines(busOf("rly_other"), "rly_other", silentLogger());
    const server = new HopServer({ bus: busOf("rly_holder"), relayId: "rly_holder", registry, gate: {} as AdmissionGate, log: silentLogger(), relayAlive: () => true });
    try {
      for (const i of [0, 5_999, 11_999]) {
        const machine = other.get(sessions[i]!.machineId);
        expect(machine?.relayId).toBe("rly_holder");
        expect([...machine!.readyStacks]).toEqual([...sessions[i]!.readyStacks]);
        expect(machine!.inFlight).toBe(i % 3);
      }
      expect(largest()).toBeLessThan(256 * 1024);
      // A machine gone from the holder's list is gone from the others' once the next announcement is whole.
      sessions.pop();
      server.announce(true);
      expect(other.get("mach_0000000000011999")).toBeUndefined();
      expect(other.get("mach_0000000000011998")).toBeDefined();
      expect(dropped).toEqual([]);
    } finally {
      server.close();
      other.close();
    }
  });
});

/** A machine's link as routing reads it: its ready stacks, those of them unloaded, what it has free to load one. */
function link(machineId: string, o: { ready: string[]; unloaded?: string[]; room?: Room; inFlight?: number }) {
  const unloaded = new Set(o.unloaded);
  return {
    machineId,
    state: "open" as const,
    inFlight: o.inFlight ?? 0,
    congested: false,
    readyStacks: new Set(o.ready),
    unloaded,
    loaded: (id: string) => o.ready.includes(id) && !unloaded.has(id),
    roomToLoad: () => o.room ?? { slot: true, bytes: 0 },
  };
}
const GiB = 1024 ** 3;
const stack = (id: string, machineId: string) => ({ id, machineId }) as Stack;

describe("replicas on machines linked to another relay, as routing ranks them", () => {
  /** Relay "here" holds m1's link; relay "holder" holds m2's and announces it; routing here sees both, as MachineReach does. */
  function twoRelays(m1: ReturnType<typeof link>, m2: ReturnType<typeof link>) {
    const { busOf, dropped } = memoryBus();
    const remote = new RemoteMachines(busOf("rly_here"), "rly_here", silentLogger());
    const server = new HopServer({ bus: busOf("rly_holder"), relayId: "rly_holder", registry: { all: () => [m2] } as unknown as AgentRegistry, gate: {} as AdmissionGate, log: silentLogger(), relayAlive: () => true });
    const targets = { get: (id: string): RoutableSession | undefined => (id === m1.machineId ? m1 : remote.get(id)) };
    return { remote, server, targets, dropped, close: () => (server.close(), remote.close()) };
  }
  const replicas = [stack("s1", "m1"), stack("s2", "m2")];

  it("sends every request to the loaded local replica, not to one elsewhere whose model is not loaded, however idle", () => {
    const m1 = link("m1", { ready: ["s1"], inFlight: 3 });
    const m2 = link("m2", { ready: ["s2"], unloaded: ["s2"], room: { slot: true, bytes: 64 * GiB } });
    const relays = twoRelays(m1, m2);
    try {
      expect(relays.remote.get("m2")?.loaded("s2")).toBe(false);
      expect([0, 1, 2, 3].map((turn) => pickTarget(relays.targets, replicas, turn).stack.id)).toEqual(["s1", "s1", "s1", "s1"]);
      // Its model loads there (and the one here unloads): the next announcement turns the order round.
      m2.unloaded.clear();
      m1.unloaded.add("s1");
      relays.server.announce(true);
      expect(relays.remote.get("m2")?.loaded("s2")).toBe(true);
      expect([0, 1, 2, 3].map((turn) => pickTarget(relays.targets, replicas, turn).stack.id)).toEqual(["s2", "s2", "s2", "s2"]);
      expect(relays.dropped).toEqual([]);
    } finally {
      relays.close();
    }
  });

  it("loads a model where the memory budget has the most left free, here or elsewhere, no budget counting as the most", () => {
    const m1 = link("m1", { ready: ["s1"], unloaded: ["s1"], room: { slot: true, bytes: 4 * GiB } });
    const m2 = link("m2", { ready: ["s2"], unloaded: ["s2"], room: { slot: true, bytes: 6 * GiB }, inFlight: 2 });
    const relays = twoRelays(m1, m2);
    try {
      expect(relays.remote.get("m2")?.roomToLoad()).toEqual({ slot: true, bytes: 6 * GiB });
      expect(pickTarget(relays.targets, replicas).stack.id).toBe("s2");
      // No place free under its --max-loaded there: the one here, with less memory free, loads it.
      const full = link("m2", { ready: ["s2"], unloaded: ["s2"], room: { slot: false, bytes: 60 * GiB } });
      const filled = twoRelays(m1, full);
      try {
        expect(pickTarget(filled.targets, replicas).stack.id).toBe("s1");
      } finally {
        filled.close();
      }
      // No budget there (announced as -1): as much free as can be.
      const unbounded = twoRelays(m1, link("m2", { ready: ["s2"], unloaded: ["s2"], room: { slot: true, bytes: Infinity } }));
      try {
        expect(unbounded.remote.get("m2")?.roomToLoad()).toEqual({ slot: true, bytes: Infinity });
        expect(pickTarget(unbounded.targets, replicas).stack.id).toBe("s2");
      } finally {
        unbounded.close();
      }
    } finally {
      relays.close();
    }
  });

  it("counts every ready stack of a machine announced as a relay older than these fields does as loaded, and drops an announcement whose unloaded stacks or room are malformed", () => {
    const { busOf } = memoryBus();
    const remote = new RemoteMachines(busOf("rly_here"), "rly_here", silentLogger());
    const holder = busOf("rly_holder");
    const announce = (machine: unknown[]) => holder.publish("makina.machines", { relay: "rly_holder", machines: [machine] });
    try {
      announce(["m_old", 0, 0, ["s1"]]);
      expect(remote.get("m_old")?.loaded("s1")).toBe(true);
      expect(remote.get("m_old")?.roomToLoad()).toEqual({ slot: true, bytes: 0 });
      // Each malformed one is dropped whole: the relay's list stays what it last was.
      for (const bad of [
        ["m_bad", 0, 0, ["s1"], ["s1"]],
        ["m_bad", 0, 0, ["s1"], ["not an id!"], 1, 0],
        ["m_bad", 0, 0, ["s1"], ["s1"], 2, 0],
        ["m_bad", 0, 0, ["s1"], ["s1"], 1, -2],
        ["m_bad", 0, 0, ["s1"], ["s1"], 1, 1.5],
        ["m_bad", 0, 0, ["s1"], ["s1"], 1, "9"],
      ]) {
        announce(bad);
        expect(remote.get("m_bad")).toBeUndefined();
        expect(remote.get("m_old")).toBeDefined();
      }
    } finally {
      remote.close();
    }
  });
});
