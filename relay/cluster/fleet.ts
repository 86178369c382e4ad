import type { Logger } from "../../proto/index.js";
import type { AgentRegistry } from "../link/index.js";
import type { AdmissionGate, InferenceTarget } from "../routing/index.js";
import { FleetBus } from "./fleet-bus.js";
import { HopServer } from "./hop-server.js";
import { RemoteMachines } from "./remote-machines.js";

/** The relays' fleet as one relay sees it over NATS (`--nats`): requests for any machine, wherever it is linked. */
export interface Fleet {
  /** Where a machine's requests go: its link here when this relay holds it, else the relay that does. */
  readonly targets: { get(machineId: string): InferenceTarget | undefined };
  /** Whether NATS is reachable now (for /health). */
  readonly connected: boolean;
  /** Requests crossing relays in flight here: sent to others, and served for others. */
  readonly inFlight: number;
  close(): Promise<void>;
}

/** Connects to NATS, announces this relay's machines and serves other relays' requests for them. */
export async function joinFleet(options: { url: string; relayId: string; registry: AgentRegistry; gate: AdmissionGate; log: Logger }): Promise<Fleet> {
  const { url, relayId, registry, gate, log } = options;
  let remote: RemoteMachines | undefined;
  let server: HopServer | undefined;
  const bus = await FleetBus.connect(url, {
    name: `makina relay ${relayId}`,
    log,
    events: {
      disconnected: () => remote?.disconnected(),
      // The others learn at once that this relay is back, and what it holds.
      reconnected: () => server?.announce(true),
    },
  });
  remote = new RemoteMachines(bus, relayId, log);
  server = new HopServer({ bus, relayId, registry, gate, log });
  const r = remote;
  const s = server;
  return {
    targets: {
      get(machineId) {
        const local = registry.get(machineId);
        if (local && local.state === "open") return local;
        return r.get(machineId) ?? local;
      },
    },
    get connected() {
      return bus.connected;
    },
    get inFlight() {
      return r.inFlight + s.inFlight;
    },
    async close() {
      s.close();
      r.close();
      await bus.close();
    },
  };
}
