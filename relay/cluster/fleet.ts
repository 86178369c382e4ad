import type { Logger } from "../../proto/index.js";
import type { AgentRegistry } from "../link/index.js";
import type { MachineCarrier } from "../machines/index.js";
import type { EventBus, RelayEvent } from "../events/index.js";
import type { AdmissionGate } from "../routing/index.js";
import { BusCarrier, serveMachineOperations, type StackOnRecord } from "./bus-carrier.js";
import { FleetBus } from "./fleet-bus.js";
import type { BusDrop } from "./bus-seal.js";
import { HopServer } from "./hop-server.js";
import { RemoteMachines } from "./remote-machines.js";
import { readEvent, readPeerMessage, SUBJECTS } from "./hop-messages.js";
import { PeerLinks, type PeerConnection } from "./peer-links.js";

/** The relays' fleet as one relay sees it over NATS (`--nats`): requests for any machine, wherever it is linked. */
export interface Fleet {
  /** The machines linked to the other relays, reached through them: the machine seam's second carrier. */
  readonly carrier: MachineCarrier;
  /** Whether NATS is reachable now (for /health). */
  readonly connected: boolean;
  /** Requests crossing relays in flight here: sent to others, and served for others. */
  readonly inFlight: number;
  /** Where this relay takes the other relays' direct connections (`host:port`), or null when it does not. */
  readonly peerAddress: string | null;
  /** The other relays this relay knows of, and whether its requests reach each directly or over NATS. */
  relays(): { relay: string; via: "direct" | "nats" }[];
  /** Messages on the bus dropped so far (not sealed by a relay, stale, replayed…), by why. */
  dropped(): Readonly<Record<BusDrop, number>>;
  /** The relay is stopping: the others stop routing to its machines; requests in flight go on. */
  drain(): void;
  close(): Promise<void>;
}

/** The listener for the other relays' direct connections could not listen (its port taken, its address not this machine's). */
export class PeerListenError extends Error {
  override readonly name = "PeerListenError";
  constructor(host: string, port: number, override readonly cause: unknown) {
    const e = cause as NodeJS.ErrnoException;
    const why = e?.code === "EADDRINUSE" ? "it is already in use by another program" : e?.code === "EADDRNOTAVAIL" ? "it is not an address of this machine" : cause instanceof Error ? cause.message : String(cause);
    super(`cannot listen for the other relays' direct connections on ${host}:${port}: ${why}`);
  }
}

/** Connects to NATS, announces this relay's machines and serves other relays' requests for them. */
export async function joinFleet(options: {
  url: string;
  relayId: string;
  registry: AgentRegistry;
  /** The machines linked here, as the other relays' operations on them are served. */
  here: MachineCarrier;
  /** A stack as the database has it, when another relay names one. */
  stackOf: StackOnRecord;
  gate: AdmissionGate;
  events: EventBus;
  log: Logger;
  /** The longest a request waits in an admission queue (a request crossing relays may wait in the other's). */
  queueTimeoutMs?: number;
  /** The longest a `flex` request waits in one. */
  flexQueueTimeoutMs?: number;
  /** The secret the relays on one database share: it seals their messages on NATS and their direct connections. */
  secret: string;
  /** A NATS credentials file (JWT and NKey seed) to authenticate to NATS with. */
  credsFile?: string | null;
  /**
   * Where to take the other relays' direct connections (port 0: any free one); without it, every request
   * crossing relays goes over NATS.
   */
  peer?: { host: string; port: number; maxMessageChars: number };
}): Promise<Fleet> {
  const { url, relayId, registry, gate, events, log } = options;
  // The bus reports its state to the two parts made on it just below.
  const parts: { r?: RemoteMachines; s?: HopServer } = {};
  const bus = await FleetBus.connect(url, {
    name: `makina relay ${relayId}`,
    relayId,
    secret: options.secret,
    credsFile: options.credsFile,
    log,
    events: {
      disconnected: () => {
        parts.r?.disconnected();
        // Answers to other relays cannot reach them now (and would have gaps): their requests end here.
        parts.s?.endAll();
      },
      // The others learn at once that this relay is back, and what it holds.
      reconnected: () => parts.s?.announce(true),
    },
  });
  const r = (parts.r = new RemoteMachines(bus, relayId, log, options.queueTimeoutMs, options.flexQueueTimeoutMs));
  let peers: PeerLinks | undefined;
  if (options.peer) {
    const origins = new WeakSet<PeerConnection>();
    try {
      peers = await PeerLinks.listen({
        ...options.peer,
        secret: options.secret,
        relayId,
        log,
        handlers: {
          incoming(connection, m) {
            const message = readPeerMessage(m);
            if (!message) return;
            if (!origins.has(connection)) {
              origins.add(connection);
              connection.onClose(() => s.originGone(connection));
            }
            if ("control" in message) return s.control(message.control, connection);
            // A relay sends its own requests only.
            if (message.request.from !== connection.relayId) return;
            const n = message.request.n;
            s.serveDirect(message.request, (reply) => connection.send({ n, r: reply }), connection);
          },
          answered: (connection, m) => r.answered(connection, m),
        },
      });
    } catch (err) {
      r.close();
      await bus.close();
      throw new PeerListenError(options.peer.host, options.peer.port, err);
    }
    r.peers = peers;
  }
  const s = (parts.s = new HopServer({ bus, relayId, registry, gate, log, relayAlive: (id) => r.alive(id), peerAddress: peers?.address }));
  // The web application's live events reach a browser on any relay: each relay's go out on the bus, and the
  // others' are given to this relay's subscribers (and not sent out again).
  const relayed = new WeakSet<RelayEvent>();
  const unsubscribe = events.subscribe((event) => {
    if (!relayed.has(event)) bus.publish(SUBJECTS.events, { from: relayId, event });
  });
  bus.subscribe(SUBJECTS.events, (m, subject, sender) => {
    const event = readEvent(m, relayId);
    if (!event) return;
    if ((m as { from: string }).from !== sender) return bus.drop("impersonating", subject);
    relayed.add(event);
    events.emit(event);
  });
  serveMachineOperations(bus, relayId, options.here, options.stackOf, log);
  return {
    carrier: new BusCarrier(bus, r, log),
    get connected() {
      return bus.connected;
    },
    get inFlight() {
      return r.inFlight + s.inFlight;
    },
    peerAddress: peers?.address ?? null,
    dropped: () => bus.dropped(),
    relays: () => r.relayIds().map((id) => ({ relay: id, via: peers?.open(id) ? "direct" : "nats" })),
    drain: () => s.drain(),
    async close() {
      unsubscribe();
      s.close();
      r.close();
      await bus.close();
      // After NATS drained: the answers of requests ended just above have left on their connections too.
      peers?.close();
    },
  };
}
