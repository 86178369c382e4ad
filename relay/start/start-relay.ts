import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { createLogger, inProcessDialer, MakinaError, Parts, type DeployStep, type LinkCredentials, type LinkDialer, type Logger, type PartState } from "../../proto/index.js";
import { relayPaths, settingOf, type RelayConfig } from "../config.js";
import { WebSessions } from "../auth/index.js";
import { ControlPlane, ModelFiles, ModelInspector } from "../control/index.js";
import { EventBus } from "../events/index.js";
import { RequestLog, UsageRecorder } from "../usage/index.js";
import { RelayMetrics } from "../metrics/index.js";
import { Deployer } from "../deploy/index.js";
import { AgentRegistry, linkAcceptor, MachineLoads, type MachineLoad, loadLinkTls, publicKeyPin, shareLinkCertificates, startLinkServer } from "../link/index.js";
import { AdmissionGate, GatewayDirectory } from "../routing/index.js";
import { createRelayApp } from "../http/create-relay-app.js";
import { RateLimiter, RedisRateLimiter, type Limiter } from "../limits/index.js";
import { neverReachedDatabase, StorageHealth } from "../health/index.js";
import { openStore, type DatabaseLocation, type Store } from "../store/index.js";
import { randomBase62 } from "../ids/index.js";
import { AuditLog } from "../audit/index.js";
import { ChangeFeed, joinFleet, PeerListenError, type Fleet } from "../cluster/index.js";
import { lockDataDir } from "../data-dir-lock.js";
import { ensureAdminToken } from "./admin-token.js";
import { listenHttp, type HttpListener } from "./http-listener.js";
import { readMetricsToken } from "./metrics-token.js";
import { peerListenAddress, peerSecret } from "./peer-settings.js";

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
  readonly store: Store;
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

/** What this relay says of itself to others and in install commands, known as its listeners come up. */
interface Whereabouts {
  relayUrl: string;
  linkAddress: string;
  install: { url: string; pin: string } | null;
  /** Told of users disabled, re-roled or deleted through other relays, once the web sessions exist. */
  userChanged: (userId: string) => void;
}

/** What the first parts give the rest: the database and what is read from it. */
interface Data {
  store: Store;
  directory: GatewayDirectory;
  adminToken: string | null;
  feed: ChangeFeed | undefined;
}

/** What every part after the first shares, made before any starts. */
interface Shared {
  config: RelayConfig;
  log: Logger;
  parts: Parts;
  relayId: string;
  registry: AgentRegistry;
  loads: MachineLoads;
  events: EventBus;
  storage: StorageHealth;
  here: Whereabouts;
  /** Aborted when the drain period is over: what is still in flight is ended, each request with its answer. */
  ending: AbortController;
}

/**
 * Composition root of the relay: an ordered list of parts (the data directory, the database, the gateway
 * directory, the change feed, the fleet, the limiter, the logs, the link, the listeners), each started after the
 * ones it is built with. A part that fails to start stops those before it, in reverse, and the start rejects
 * with a `PartStartError` naming the part and the setting that changes it: nothing is left open.
 */
export async function startRelay(config: RelayConfig, options: { log?: Logger } = {}): Promise<Relay> {
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
    here: { relayUrl: "", linkAddress: "", install: null, userChanged: () => {} },
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

/** The data directory, the database, the admin token, the gateway's directory and (on PostgreSQL) the change feed. */
async function startData(s: Shared): Promise<Data> {
  const { config, log, parts, registry, events, storage, here } = s;
  await parts.start({ name: "the data directory", setting: settingOf("dataDir"), start: () => lockDataDir(config.dataDir), stop: (lock) => lock.release() });
  const location: DatabaseLocation = config.database ? { kind: "postgres", url: config.database } : { kind: "sqlite", file: relayPaths(config.dataDir).database };
  const store = await parts.start({
    name: "the database",
    setting: settingOf(config.database ? "database" : "dataDir"),
    start: () => openStore(location, { onWriteError: (what, err) => storage.failed(what, err), relayId: s.relayId }),
    stop: (store) => store.close(),
  });
  if (store.migrated > 0) log.info("database schema brought up to date", { database: store.dialect, migrations: store.migrated });
  const adminToken = await parts.start({
    name: "the admin token",
    start: async () => {
      // One relay per SQLite file (the data directory's lock): no link exists yet, so no machine is online. On
      // PostgreSQL other relays may hold links: the change feed marks offline those of relays gone.
      if (location.kind === "sqlite") await storage.attempt("machine states", () => store.machines.markAllOffline());
      return ensureAdminToken(store, config.dataDir, log);
    },
  });
  const directory = await parts.start({ name: "the gateway directory", start: () => GatewayDirectory.open(store, log.child({ component: "directory" })), stop: (d) => d.close() });
  if (location.kind === "sqlite") return { store, directory, adminToken, feed: undefined };
  const feed = await parts.start({
    name: "the change feed",
    setting: settingOf("database"),
    start: () =>
      ChangeFeed.start({
        url: location.url,
        relayId: s.relayId,
        describe: () => ({ url: here.relayUrl || null, linkAddress: here.linkAddress || null }),
        store,
        directory,
        leaseMs: config.changeLeaseMs,
        hooks: {
          machineChanged: (machineId) => registry.get(machineId)?.end(),
          userChanged: (userId) => here.userChanged(userId),
          machinesOffline: (machines) => machines.forEach((m) => events.emit({ type: "machine", orgId: m.orgId, machineId: m.id })),
          caughtUp: async () => {
            // A machine revoked or given a new token while this relay could not hear keeps no link here.
            await Promise.all(
              registry.all().map(async (session) => {
                if (!(await session.credentialsHold())) session.end("This machine was revoked or given a new token; run its new install command.");
              }),
            );
            // Another relay may have taken this one for gone and marked its machines offline.
            await store.machines.markHeld(registry.all().filter((session) => session.state === "open").map((session) => session.machineId));
          },
        },
        log: log.child({ component: "changes" }),
      }),
    // Off the relays table once nothing more is served (admin writes answered too): writers stop waiting for it.
    stop: (f) => f.stop(),
  });
  // Every write answers once every other relay has it (or has stopped serving from memory); a write that never
  // reached PostgreSQL changed nothing to wait for.
  store.notices.listen((_change, failure) => (failure !== undefined && neverReachedDatabase(failure) ? undefined : feed.barrier()));
  return { store, directory, adminToken, feed };
}

/** The fleet, the limiter, the logs, the link, the control plane and the listeners; then the relay itself. */
async function startServing(s: Shared, data: Data, metricsTokenHash: string | undefined): Promise<Relay> {
  const { config, log, parts, registry, loads, events, storage, here } = s;
  const { store, directory, feed } = data;
  const gate = new AdmissionGate({
    maxInFlightPerStack: config.maxInFlightPerStack,
    maxInFlightPerMachine: config.maxInFlightPerMachine,
    maxQueuePerStack: config.maxQueuePerStack,
    queueTimeoutMs: config.queueTimeoutMs,
  });
  // Relays on one database reach each other's machines over NATS: a relay that cannot reach it does not start
  // (saying so), before it takes any link.
  const fleet = config.nats ? await startFleet(s, store, gate) : undefined;
  const limiter = await parts.start<Limiter>({
    name: "the rate limiter",
    setting: settingOf("redis"),
    start: async () => {
      if (!config.redis) return new RateLimiter();
      const redis = await RedisRateLimiter.connect(config.redis, log.child({ component: "limits" }));
      // Limits shared by every relay from the first request on; a Redis that does not answer yet is not a reason
      // to stay down: this relay applies limits on its own meanwhile, logged and in /health.
      await redis.ready(5000).catch((err: unknown) => log.warn("starting with rate limits per relay: Redis does not answer yet", { error: String(err) }));
      return redis;
    },
    stop: (l) => l.close?.(),
  });
  // Counts the database still refuses are lost with the process: said so in the log, the stop goes on.
  const usage = await parts.start({
    name: "the usage counts",
    start: () => new UsageRecorder(store.db, { onWriteError: (err) => storage.failed("usage counts", err) }),
    stop: (u) => storage.attempt("usage counts", () => u.close()).then(() => undefined),
  });
  const requests = await parts.start({
    name: "the request log",
    start: () =>
      new RequestLog(store, {
        retentionMs: config.requestLogDays * 86_400_000,
        keepPerOrg: config.requestLogRows,
        onWriteError: (what, err) => storage.failed(what, err),
        onDropped: (count) => log.warn("requests went unlogged: more came than the database took in time", { count }),
      }),
    stop: (r) => storage.attempt("the request log", () => r.close()).then(() => undefined),
  });
  const audit = await parts.start({
    name: "the audit log",
    start: () => new AuditLog(store, log.child({ component: "audit" }), { retentionMs: config.auditRetentionDays * 86_400_000, onWriteError: (what, err) => storage.failed(what, err) }),
    stop: (a) => a.close(),
  });
  // Several relays share a PostgreSQL database: each one's series carry its id.
  const metrics = new RelayMetrics({ machinesOnline: () => registry.size, relayId: store.dialect === "postgres" ? s.relayId : undefined, otherRelays: fleet?.relays });
  const deployer = new Deployer(store, registry, log.child({ component: "deployer" }), events, config.deployStepTimeoutMs, storage);
  if (fleet) deployer.reachOthers(fleet.serveDeployments(deployer));
  const accept = linkAcceptor({
    store,
    registry,
    events,
    log: log.child({ component: "link" }),
    heartbeatIntervalMs: config.heartbeatIntervalMs,
    streamIdleTimeoutMs: config.streamIdleTimeoutMs,
    loads,
    runtimeMetrics: { reported: (machineId, stacks) => metrics.runtimeReported(machineId, stacks), machineGone: (machineId) => metrics.machineGone(machineId) },
    storage,
  });
  const { link, tls, tlsOn } = await startLink(s, store, accept);
  const linkCaSha256 = tls?.caSha256 ?? null;
  const control = new ControlPlane(
    store,
    deployer,
    () => ({ address: here.linkAddress, tls: tlsOn, caSha256: linkCaSha256, relayUrl: here.relayUrl, install: here.install, otherAddresses: feed ? () => feed.linkAddresses() : undefined }),
    events,
    new ModelInspector({ hubEndpoint: config.hfEndpoint }),
    (machineId) => registry.get(machineId)?.end(),
    modelFiles(registry, fleet),
  );
  const sessions = new WebSessions(store, { audit });
  here.userChanged = (userId) => sessions.userChanged(userId);
  const apps = createRelayApp(
    {
      storage,
      registry,
      directory,
      control,
      events,
      usage,
      requests,
      // A machine linked here has its load here; one linked to another relay, there.
      loadsOf: async (ids) => {
        const found = new Map<string, MachineLoad>();
        const elsewhere = ids.filter((id) => {
          const load = loads.get(id);
          if (load) found.set(id, load);
          return !load;
        });
        if (fleet && elsewhere.length > 0) for (const [id, load] of await fleet.loadsElsewhere(elsewhere)) found.set(id, load);
        return found;
      },
      metrics,
      sessions,
      audit,
      log: log.child({ component: "http" }),
      limiter,
      targets: fleet?.targets,
      fleet,
      adminTokenHash: () => directory.adminTokenHash,
      trustProxy: config.trustProxy,
      eventsKeepaliveMs: config.eventsKeepaliveMs,
      metricsTokenHash,
      limits: {
        bodyLimitBytes: config.bodyLimitBytes,
        firstTokenTimeoutMs: config.firstTokenTimeoutMs,
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

/** Joins the relays on the same database over NATS, with its direct connections when they are on. */
async function startFleet(s: Shared, store: Store, gate: AdmissionGate): Promise<Fleet> {
  const { config, log, parts, registry, loads, events } = s;
  const peer = config.peerAddress !== "off" ? { ...peerListenAddress(config), secret: await peerSecret(store), maxMessageChars: 2 * config.bodyLimitBytes + 1024 * 1024 } : undefined;
  return parts.start({
    name: "the other relays (NATS)",
    // The listener for the other relays' direct connections says so when it cannot listen; anything else is NATS.
    setting: (err) => settingOf(err instanceof PeerListenError ? "peerAddress" : "nats"),
    start: () => joinFleet({ url: config.nats!, relayId: s.relayId, registry, loads, gate, events, log: log.child({ component: "fleet" }), queueTimeoutMs: config.queueTimeoutMs, peer }),
    stop: (f) => f.close(),
  });
}

/** The link's TLS (its CA shared through the database on PostgreSQL) and the gRPC server agents dial. */
async function startLink(s: Shared, store: Store, accept: ReturnType<typeof linkAcceptor>) {
  const { config, log, parts, registry, here } = s;
  const loopbackOnly = ["127.0.0.1", "localhost", "::1"].includes(config.grpcHost);
  const tlsOn = config.grpcTls === "on" || (config.grpcTls === "auto" && !loopbackOnly);
  const givenCertificate = config.grpcTlsCert && config.grpcTlsKey ? { certFile: config.grpcTlsCert, keyFile: config.grpcTlsKey } : undefined;
  const tls = await parts.start({
    name: "the link's certificate",
    setting: givenCertificate ? `${settingOf("grpcTlsCert")}, ${settingOf("grpcTlsKey")}` : settingOf("dataDir"),
    start: async () => {
      if (!tlsOn) return undefined;
      // Relays on one database present one CA: the fingerprint an install command pins holds for each of them.
      if (!givenCertificate && store.dialect === "postgres") await shareLinkCertificates(store, config.dataDir, log);
      return loadLinkTls(config.dataDir, givenCertificate);
    },
  });
  if (!tlsOn && !loopbackOnly) log.warn("the agents' link is plaintext on a public address: prompts, answers and machine tokens cross the network unencrypted", { grpcHost: config.grpcHost });
  const link = await parts.start({
    name: `the link listener (${config.grpcHost}:${config.grpcPort})`,
    setting: (err) => listenSetting(err, "grpcPort", "grpcHost"),
    start: () => startLinkServer({ accept, registry, host: config.grpcHost, port: config.grpcPort, tls }),
    stop: (l) => l.stop(),
  });
  const linkHost = config.grpcHost === "0.0.0.0" || config.grpcHost === "::" ? "127.0.0.1" : config.grpcHost;
  here.linkAddress = config.publicGrpcAddress ?? `${linkHost}:${link.port}`;
  return { link, tls, tlsOn };
}

/** A model file named by a local path is looked for on its machine: over this relay's link, or the relay's holding it. */
function modelFiles(registry: AgentRegistry, fleet: Fleet | undefined): ModelFiles {
  const checkHere = (machineId: string, step: Extract<DeployStep, { kind: "checkModel" }>, signal?: AbortSignal) => {
    const session = registry.get(machineId);
    if (!session || session.state !== "open") return Promise.reject(new MakinaError("machine_offline", "The machine is not linked to this relay."));
    return session.runCommand("", step, { signal, idleTimeoutMs: 5000 });
  };
  const checkElsewhere = fleet?.serveModelFiles((machineId, step) => checkHere(machineId, step));
  return new ModelFiles((machineId, step, signal) => (registry.get(machineId)?.state === "open" ? checkHere(machineId, step, signal) : checkElsewhere?.(machineId, step)));
}

/** The gateway's listener, the admin API's (unless shared) and the install listener (with TLS on the link). */
async function startListeners(s: Shared, apps: ReturnType<typeof createRelayApp>, tls: ReturnType<typeof loadLinkTls> | undefined) {
  const { config, log, parts, here } = s;
  const https = config.tlsCert !== null && config.tlsKey !== null;
  const tlsFiles = https ? await parts.start({ name: "the HTTPS certificate", setting: `${settingOf("tlsCert")}, ${settingOf("tlsKey")}`, start: () => ({ cert: readFileSync(config.tlsCert!), key: readFileSync(config.tlsKey!) }) }) : undefined;
  // Slow clients cannot hold the relay: the headers must arrive within headerTimeoutMs and the whole request
  // (body included) within bodyTimeoutMs, or the connection gets 408; connections beyond maxConnections are refused.
  const limits = { headerTimeoutMs: config.headerTimeoutMs, bodyTimeoutMs: config.bodyTimeoutMs, maxConnections: config.maxConnections };
  const all: HttpListener[] = [];
  const listener = async (name: string, port: keyof RelayConfig, host: keyof RelayConfig, start: () => Promise<HttpListener>) => {
    const l = await parts.start({ name, setting: (err) => listenSetting(err, port, host), start, stop: (l) => l.close(2000) });
    all.push(l);
    return l;
  };
  const main = await listener(`the gateway listener (${config.host}:${config.port})`, "port", "host", () => listenHttp(apps.public, config.host, config.port, limits, tlsFiles));
  const admin =
    apps.admin && config.adminPort !== "shared"
      ? await listener(`the admin listener (${config.adminHost}:${config.adminPort})`, "adminPort", "adminHost", () => listenHttp(apps.admin!, config.adminHost, config.adminPort as number, limits, tlsFiles))
      : undefined;
  // What joining machines fetch, over TLS with the link's certificate, on the link's host: the install command
  // pins its key, so a machine checks whom it talks to before the token or anything else crosses the network.
  if (apps.install && tls) {
    const installer = await listener(`the install listener (${config.grpcHost}:${config.installPort})`, "installPort", "grpcHost", () =>
      listenHttp(apps.install!, config.grpcHost, config.installPort, limits, { cert: tls.certChain, key: tls.privateKey }),
    );
    const linkHostName = here.linkAddress.slice(0, here.linkAddress.lastIndexOf(":"));
    here.install = { url: `https://${linkHostName}:${installer.port}`, pin: publicKeyPin(tls.privateKey) };
  }
  // Passwords, session cookies and the admin token reach the admin listener: beyond loopback, in the clear,
  // unless a proxy this relay trusts terminates TLS in front of it.
  const adminHost = admin ? config.adminHost : config.host;
  if (!https && !config.trustProxy && !isLoopbackHost(adminHost)) {
    log.warn("the admin API, sign-in and the web application answer beyond loopback without TLS: passwords, session cookies and the admin token cross the network in the clear; give the relay a certificate (MAKINA_TLS_CERT, MAKINA_TLS_KEY) or put it behind a TLS proxy it trusts (MAKINA_TRUST_PROXY)", { host: adminHost });
  }
  const everyAddress = config.host === "0.0.0.0" || config.host === "::";
  here.relayUrl = config.publicUrl ?? (everyAddress ? main.url.replace(`//${config.host.includes(":") ? `[${config.host}]` : config.host}:`, `//${hostname()}:`) : main.url);
  return { main, adminUrl: admin?.url ?? main.url, all };
}

/** The setting that changes a listener that could not listen: its port when taken or privileged, else its host. */
function listenSetting(err: unknown, port: keyof RelayConfig, host: keyof RelayConfig): string {
  const code = (err as NodeJS.ErrnoException).code;
  return code === "EADDRNOTAVAIL" || code === "ENOTFOUND" ? settingOf(host) : settingOf(port);
}

/**
 * The drain before the parts stop: no new connections, the live event streams ended, no new requests from
 * other relays; the requests in flight finish within `drainTimeoutMs`, idle connections closed as they go idle.
 */
async function drain(s: Shared, listeners: HttpListener[], inFlight: () => number, drainFleet: () => void): Promise<void> {
  const { config, log, events } = s;
  for (const l of listeners) l.stopAccepting();
  events.close();
  drainFleet();
  log.info("relay stopping: no new connections; draining requests in flight", { inFlight: inFlight(), graceMs: config.drainTimeoutMs });
  const deadline = Date.now() + config.drainTimeoutMs;
  while (inFlight() > 0 && Date.now() < deadline) {
    for (const l of listeners) l.closeIdle();
    await sleep(50);
  }
  if (inFlight() > 0) {
    log.warn("drain period over: ending requests still in flight", { inFlight: inFlight() });
    s.ending.abort();
  }
  for (const l of listeners) l.closeIdle();
}

/**
 * Lets `makina admin --data-dir` on this host find the relay (its admin API is at admin_url). Readable by this
 * user only, as its neighbours (the database, the admin token) are; an older file is made so too.
 */
function writeRelayInfo(config: RelayConfig, at: { url: string; adminUrl: string; linkAddress: string; linkTls: boolean; linkCaSha256: string | null; install: { url: string; pin: string } | null }): void {
  const info = relayPaths(config.dataDir).info;
  const text = { url: at.url, admin_url: at.adminUrl, link_address: at.linkAddress, link_tls: at.linkTls, link_ca_sha256: at.linkCaSha256, install_url: at.install?.url ?? null, install_pin: at.install?.pin ?? null, pid: process.pid };
  writeFileSync(info, JSON.stringify(text, null, 2) + "\n", { mode: 0o600 });
  chmodSync(info, 0o600);
}

/** Whether a listening host is reachable from this machine only. */
function isLoopbackHost(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\./.test(host);
}
