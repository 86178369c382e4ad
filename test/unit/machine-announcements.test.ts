import { describe, expect, it } from "vitest";
import { silentLogger } from "../../proto/index.js";
import type { AgentRegistry } from "../../relay/link/index.js";
import type { AdmissionGate } from "../../relay/routing/index.js";
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
    const sessions = Array.from({ length: 12_000 }, (_, i) => ({ machineId: `mach_${String(i).padStart(16, "0")}`, state: "open", inFlight: i % 3, congested: false, readyStacks: new Set([`stk_${String(i).padStart(16, "0")}`]) }));
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
