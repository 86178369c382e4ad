import { MakinaError, type DeployStep, type Logger, type StepResult } from "../../proto/index.js";
import type { AgentRegistry, MachineLoad, MachineLoads } from "../link/index.js";
import type { EventBus, RelayEvent } from "../events/index.js";
import type { AdmissionGate, InferenceTarget } from "../routing/index.js";
import { FleetBus } from "./fleet-bus.js";
import { HopServer } from "./hop-server.js";
import { RemoteMachines } from "./remote-machines.js";
import { readEvent, readLoadsReply, readLoadsRequest, readModelFileAsk, readModelFileReply, readPeerMessage, readStackMessage, SUBJECTS, type LoadsReply, type ModelFileReply } from "./hop-messages.js";
import { PeerLinks, type PeerConnection } from "./peer-links.js";
import type { DeploymentsElsewhere } from "../deploy/index.js";

/** A look at a model file on a machine. */
type ModelCheck = Extract<DeployStep, { kind: "checkModel" }>;

/** The relays' fleet as one relay sees it over NATS (`--nats`): requests for any machine, wherever it is linked. */
export interface Fleet {
  /** Where a machine's requests go: its link here when this relay holds it, else the relay that does. */
  readonly targets: { get(machineId: string): InferenceTarget | undefined };
  /** Whether NATS is reachable now (for /health). */
  readonly connected: boolean;
  /** Requests crossing relays in flight here: sent to others, and served for others. */
  readonly inFlight: number;
  /** Where this relay takes the other relays' direct connections (`host:port`), or null when it does not. */
  readonly peerAddress: string | null;
  /** The other relays this relay knows of, and whether its requests reach each directly or over NATS. */
  relays(): { relay: string; via: "direct" | "nats" }[];
  /** The relay is stopping: the others stop routing to its machines; requests in flight go on. */
  drain(): void;
  /**
   * The latest load of each of these machines linked to another relay, asked of those relays (a relay that does
   * not answer within a second leaves its machines' loads unknown).
   */
  loadsElsewhere(machineIds: readonly string[]): Promise<Map<string, MachineLoad>>;
  /**
   * Runs, on this relay, the deployments other relays are asked for when this relay holds the machine's link,
   * and returns where this relay's deployer sends those of machines linked elsewhere.
   */
  serveDeployments(deployer: { deployHere(stackId: string): Promise<void>; stopHere(stackId: string): Promise<boolean> }): DeploymentsElsewhere;
  /**
   * Answers the other relays' looks at model files on the machines linked here (with `checkHere`), and returns how
   * this relay asks for one on a machine linked elsewhere: undefined when no relay is known to hold it.
   */
  serveModelFiles(checkHere: (machineId: string, step: ModelCheck) => Promise<StepResult>): (machineId: string, step: ModelCheck) => Promise<StepResult> | undefined;
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
  /** The loads of the machines linked here, which other relays ask for. */
  loads: MachineLoads;
  gate: AdmissionGate;
  events: EventBus;
  log: Logger;
  /** The longest a request waits in an admission queue (a request crossing relays may wait in the other's). */
  queueTimeoutMs?: number;
  /**
   * Where to take the other relays' direct connections (port 0: any free one), and the secret the relays on
   * one database share; without it, every request crossing relays goes over NATS.
   */
  peer?: { host: string; port: number; secret: string; maxMessageChars: number };
}): Promise<Fleet> {
  const { url, relayId, registry, gate, events, log } = options;
  // The bus reports its state to the two parts made on it just below.
  const parts: { r?: RemoteMachines; s?: HopServer } = {};
  const bus = await FleetBus.connect(url, {
    name: `makina relay ${relayId}`,
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
  const r = (parts.r = new RemoteMachines(bus, relayId, log, options.queueTimeoutMs));
  let peers: PeerLinks | undefined;
  if (options.peer) {
    const origins = new WeakSet<PeerConnection>();
    try {
      peers = await PeerLinks.listen({
        ...options.peer,
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
  bus.subscribe(SUBJECTS.events, (m) => {
    const event = readEvent(m, relayId);
    if (!event) return;
    relayed.add(event);
    events.emit(event);
  });
  bus.respond(SUBJECTS.loads(relayId), async (m) => {
    const reply: LoadsReply = { loads: [] };
    const now = Date.now();
    for (const id of readLoadsRequest(m) ?? []) {
      const load = options.loads.get(id);
      if (load) reply.loads.push([id, load.usage, Math.max(0, now - load.receivedAt)]);
    }
    return reply;
  });
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
    peerAddress: peers?.address ?? null,
    relays: () => r.relayIds().map((id) => ({ relay: id, via: peers?.open(id) ? "direct" : "nats" })),
    drain: () => s.drain(),
    async loadsElsewhere(machineIds) {
      const byRelay = new Map<string, string[]>();
      for (const id of machineIds) {
        const relay = r.get(id)?.relayId;
        if (relay !== undefined) byRelay.set(relay, [...(byRelay.get(relay) ?? []), id]);
      }
      const loads = new Map<string, MachineLoad>();
      await Promise.all(
        [...byRelay].map(async ([relay, machines]) => {
          const reply = await bus.request(SUBJECTS.loads(relay), { machines }, 1000).catch(() => undefined);
          const now = Date.now();
          const asked = new Set(machines);
          for (const [id, usage, ageMs] of readLoadsReply(reply)) if (asked.has(id)) loads.set(id, { usage, receivedAt: now - ageMs });
        }),
      );
      return loads;
    },
    serveDeployments(deployer) {
      // Every relay hears every deployment asked elsewhere; the one holding the machine's link runs it. (Sent to
      // all rather than to the holder this relay knows of: a machine that linked a moment ago is not missed.)
      bus.subscribe(SUBJECTS.deploy, (m) => {
        const stackId = readStackMessage(m);
        if (stackId) void deployer.deployHere(stackId).catch((err: unknown) => log.warn("a deployment asked by another relay could not start", { stackId, error: String(err) }));
      });
      bus.respond(SUBJECTS.stop, async (m) => {
        const stackId = readStackMessage(m);
        return stackId && (await deployer.stopHere(stackId)) ? { done: true } : undefined;
      });
      return {
        deploy(stack) {
          return bus.publish(SUBJECTS.deploy, { stack: stack.id });
        },
        async stop(stack) {
          // The relay holding the link answers once the stop is done (it takes as long as the deployment step it
          // ends); none answering soon when none is known to hold it means no relay does.
          const known = r.get(stack.machineId) !== undefined;
          try {
            await bus.request(SUBJECTS.stop, { stack: stack.id }, known ? 120_000 : 2000);
            return true;
          } catch (err) {
            if (known) log.warn("the relay holding the machine did not confirm the stop", { stackId: stack.id, error: String(err) });
            return known;
          }
        },
      };
    },
    serveModelFiles(checkHere) {
      bus.respond(SUBJECTS.modelFiles(relayId), async (m) => {
        const asked = readModelFileAsk(m);
        if (!asked) return undefined;
        try {
          return { result: await checkHere(asked.machine, { kind: "checkModel", ref: asked.ref, runtime: asked.runtime }) } satisfies ModelFileReply;
        } catch (err) {
          const e = MakinaError.from(err);
          // The machine's answer travels; anything else (offline now, no answer) leaves the file unknown there too.
          if (e.code === "not_found" || e.code === "invalid_value") return { refused: { code: e.code, message: e.message } } satisfies ModelFileReply;
          // Not linked here now, or silent: said at once, so the asking relay does not wait out its time.
          return { unknown: true } satisfies ModelFileReply;
        }
      });
      return (machineId, step) => {
        const relay = r.get(machineId)?.relayId;
        if (relay === undefined) return undefined;
        return bus.request(SUBJECTS.modelFiles(relay), { machine: machineId, ref: step.ref, runtime: step.runtime }, 5000).then((reply) => {
          const result = readModelFileReply(reply);
          if (!result) throw new MakinaError("machine_offline", "The relay holding the machine said nothing usable of the model file.");
          return result;
        });
      };
    },
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
