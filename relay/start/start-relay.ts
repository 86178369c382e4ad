import { ssoDeps } from "./start-sso.js";
import { startAlerts } from "./start-alerts.js";
import { createLogger, inProcessDialer, Parts, type LinkCredentials, type LinkDialer, type Logger, type PartState } from "../../proto/index.js";
import { settingOf, type RelayConfig } from "../config.js";
import { WebSessions } from "../auth/index.js";
import { ControlPlane } from "../control/index.js";
import { EventBus } from "../events/index.js";
import { UsageRecorder } from "../usage/index.js";
import { RelayMetrics } from "../metrics/index.js";
import { Deployer, DeploymentRunner } from "../deploy/index.js";
import { LinkCarrier, MachineReach } from "../machines/index.js";
import { AgentRegistry, linkAcceptor, MachineLoads } from "../link/index.js";
import { AdmissionGate } from "../routing/index.js";
import { createRelayApp } from "../http/create-relay-app.js";
import { StorageHealth } from "../health/index.js";
import type { Store } from "../store/index.js";
import { randomBase62 } from "../ids/index.js";
import { readMetricsToken } from "./metrics-token.js";
import type { Data, Shared } from "./relay-parts.js";
import { controlPlane, startBooks } from "./start-books.js";
import { startData } from "./start-data.js";
import { startFleet, startLink } from "./start-link.js";
import { drain, startListeners, writeRelayInfo } from "./start-listeners.js";

/** A running relay. */
export interface Relay {
  readonly config: RelayConfig;
  /** e.g. `http://127.0.0.1:8080` */
  readonly url: string;
  /** Where the admin API and the web application answer: `url` itself, or the admin listener's own URL. */
  readonly adminUrl: string;
  readonly httpPort: number;
  readonly grpcPort: number;
  /** `host:port` agents dial. */
  readonly linkAddress: string;
  /** Whether the link is TLS. */
  readonly linkTls: boolean;
  /** SHA-256 of the relay's own link CA, which agents pin (`--ca-sha256`); null with a given certificate or no TLS. */
  readonly linkCaSha256: string | null;
  /**
   * With TLS on the link: where joining machines fetch the install script and agent package and check their
   * token (`https://host:port`, the link's certificate), and the pin of its key (`sha256//…`) that install
   * commands carry; null when the public listener serves them (a link on loopback, or in the clear).
   */
  readonly install: { url: string; pin: string } | null;
  readonly registry: AgentRegistry;
  readonly deployer: Deployer;
  readonly control: ControlPlane;
  /** Control-plane changes, as the web application's live pages see them. */
  readonly events: EventBus;
  /** Gateway usage per key and model, for the usage page. */
  readonly usage: UsageRecorder;
  /** Requests in flight per stack and machine, and those waiting their turn. */
  readonly gate: AdmissionGate;
  /**
   * Opens links from an agent in this same process (`makina up`): the agent's messages are handed to the
   * relay as they are, with no gRPC, no encoding and no socket between them.
   */
  inProcessDialer(credentials: LinkCredentials): LinkDialer;
  /**
   * The admin token, read from the data directory; null when the directory has no copy of the token the
   * relays on its PostgreSQL database accept (made by another relay).
   */
  readonly adminToken: string | null;
  /** The relay's parts in the order they started, each with its state (all `stopped` once `stop` resolved). */
  parts(): { name: string; state: PartState }[];
  /**
   * Stops accepting connections, lets the requests in flight finish (up to `drainTimeoutMs`), then stops every
   * part in the reverse of the order it started: listeners, link, logs, limiter, fleet, change feed, database,
   * data directory. Idempotent.
   */
  stop(): Promise<void>;
}

/**
 * A running relay with its database at hand: for tests and the benchmarks' seeding, which write what no command
 * makes (a thousand machines, a user with a known password). The front door (`relay/index.ts`) gives `Relay`.
 */
export interface RelayInternals extends Relay {
  readonly store: Store;
}

/**
 * Composition root of the relay: an ordered list of parts (the data directory, the database, the gateway
 * directory, the change feed, the fleet, the limiter, the logs, the link, the listeners), each started after the
 * ones it is built with. A part that fails to start stops those before it, in reverse, and the start rejects
 * with a `PartStartError` naming the part and the setting that changes it: nothing is left open.
 */
export async function startRelay(config: RelayConfig, options: { log?: Logger } = {}): Promise<RelayInternals> {
  const log = (options.log ?? createLogger({ level: config.logLevel, format: config.logFormat })).child({ component: "relay" });
  const parts = new Parts("relay", log);
  const shared: Shared = {
    config,
    log,
    parts,
    // This process among the relays on one database (new at every start).
    relayId: `rly_${randomBase62(12)}`,
    registry: new AgentRegistry(),
    loads: new MachineLoads(),
    events: new EventBus(),
    storage: new StorageHealth(log.child({ component: "storage" })),
    ending: new AbortController(),
    // Known once the listeners are up (below); other relays read them from the relays table.
    here: { relayUrl: "", linkAddress: "", install: null, reach: null, userChanged: () => {} },
  };
  // Read before anything opens: a missing or short token stops the start with the reason.
  const metricsTokenHash =
    config.metricsTokenFile === null ? undefined : await parts.start({ name: "the metrics token", setting: settingOf("metricsTokenFile"), start: () => readMetricsToken(config.metricsTokenFile!) });
  try {
    return await startServing(shared, await startData(shared), metricsTokenHash);
  } catch (err) {
    // A failed part has stopped the others already; a step between parts (a read of the database) has not.
    await parts.stop();
    throw err;
  }
}

/** The fleet, the limiter, the logs, the link, the control plane and the listeners; then the relay itself. */
async function startServing(s: Shared, data: Data, metricsTokenHash: string | undefined): Promise<RelayInternals> {
  const { config, log, parts, registry, loads, events, storage, here } = s;
  const { store, directory, feed, vault, peerSecret } = data;
  const gate = new AdmissionGate({
    maxInFlightPerStack: config.maxInFlightPerStack,
    maxInFlightPerMachine: config.maxInFlightPerMachine,
    maxQueuePerStack: config.maxQueuePerStack,
    queueTimeoutMs: config.queueTimeoutMs,
    flexQueueTimeoutMs: config.flexQueueTimeoutMs,
    agingMs: config.queueAgingMs,
  });
  // Relays on one database reach each other's machines over NATS: a relay that cannot reach it does not start
  // (saying so), before it takes any link.
  // The deployments run next to the links: this relay's runner, for its own and the other relays' asks.
  const runner = new DeploymentRunner(store, registry, log.child({ component: "deployer" }), events, config.deployStepTimeoutMs, storage);
  const linked = new LinkCarrier(registry, loads, runner);
  // NATS needs PostgreSQL (the config says so), where the shared secret was read.
  const fleet = config.nats && peerSecret !== undefined ? await startFleet(s, store, peerSecret, gate, linked) : undefined;
  // Every machine, wherever it is linked: here, or on another relay (the fleet's carrier).
  const machines = new MachineReach(linked, fleet?.carrier);
  const { limiter, usage, requests, audit } = await startBooks(s, store);
  const alerts = await startAlerts(s, { store, vault, limiter, usage });
  // Several relays share a PostgreSQL database: each one's series carry its id.
  const metrics = new RelayMetrics({ machinesOnline: () => registry.size, relayId: store.dialect === "postgres" ? s.relayId : undefined, otherRelays: fleet?.relays, busDropped: fleet?.dropped });
  const deployer = new Deployer(store, machines, runner, events);
  const accept = linkAcceptor({
    store,
    registry,
    events,
    log: log.child({ component: "link" }),
    heartbeatIntervalMs: config.heartbeatIntervalMs,
    streamIdleTimeoutMs: config.streamIdleTimeoutMs,
    loads,
    runtimeFailed: alerts.runtimeFailed,
    runtimeMetrics: { reported: (machineId, stacks) => metrics.runtimeReported(machineId, stacks), machineGone: (machineId) => metrics.machineGone(machineId), residency: (machineId, stackId, event) => metrics.residency(machineId, stackId, event) },
    storage,
  });
  const { link, tls, tlsOn } = await startLink(s, store, vault, accept);
  const linkCaSha256 = tls?.caSha256 ?? null;
  const sessions = new WebSessions(store);
  here.userChanged = (userId) => sessions.userChanged(userId);
  const sso = ssoDeps(s, { store, vault });
  const control = controlPlane(s, { store, directory, deployer, feed, machines, linkCaSha256, tlsOn, audit, sessions, usage, requests, limiter, alerts: alerts.deps, sso });
  const apps = createRelayApp(
    {
      storage,
      directory,
      control,
      events,
      usage,
      requests,
      metrics,
      sessions,
      log: log.child({ component: "http" }),
      limiter,
      budgetsPerRelay: () => store.dialect === "postgres" && limiter.scope !== "shared" && directory.budgeted,
      targets: machines.targets,
      linked: () => registry.models(),
      fleet: fleet && { get connected() { return fleet.connected; }, insecure: config.natsInsecure },
      adminTokenHash: () => directory.adminTokenHash,
      trustProxy: config.trustProxy,
      eventsKeepaliveMs: config.eventsKeepaliveMs,
      metricsTokenHash,
      limits: {
        bodyLimitBytes: config.bodyLimitBytes,
        firstTokenTimeoutMs: config.firstTokenTimeoutMs,
        loadTimeoutMs: config.loadTimeoutMs,
        flexQueueTimeoutMs: config.flexQueueTimeoutMs,
        requestTimeoutMs: config.requestTimeoutMs,
        defaultCompletionEstimate: config.defaultCompletionEstimate,
      },
      gate,
      ending: s.ending.signal,
    },
    { separateAdmin: config.adminPort !== "shared", separateInstall: tls !== undefined },
  );
  const listeners = await startListeners(s, apps, tls);
  await storage.attempt("this relay's addresses", async () => feed?.announce());
  writeRelayInfo(config, { url: listeners.main.url, adminUrl: listeners.adminUrl, linkTls: tlsOn, linkCaSha256, linkAddress: here.linkAddress, install: here.install });
  log.info("relay listening", { url: listeners.main.url, adminUrl: listeners.adminUrl, grpcPort: link.port, linkTls: tlsOn, linkCaSha256, installUrl: here.install?.url ?? null, dataDir: config.dataDir });

  let stopping: Promise<void> | undefined;
  return {
    config,
    url: listeners.main.url,
    adminUrl: listeners.adminUrl,
    httpPort: listeners.main.port,
    grpcPort: link.port,
    linkAddress: here.linkAddress,
    linkTls: tlsOn,
    linkCaSha256,
    install: here.install,
    store,
    registry,
    deployer,
    control,
    events,
    usage,
    gate,
    adminToken: data.adminToken,
    inProcessDialer: (credentials) => inProcessDialer(accept, credentials),
    parts: () => parts.list(),
    stop() {
      stopping ??= (async () => {
        // Requests waiting their turn in the admission queues count too: they are let in as others finish.
        // And requests crossing relays: sent to others from here, and served here for others (on the links too).
        const inFlight = () => registry.all().reduce((n, session) => n + session.inFlight, 0) + gate.waiting + (fleet?.inFlight ?? 0);
        await drain(s, listeners.all, inFlight, () => fleet?.drain());
        await parts.stop();
        log.info("relay stopped");
      })();
      return stopping;
    },
  };
}

