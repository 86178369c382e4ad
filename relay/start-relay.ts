import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { hostname, networkInterfaces } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import type { AddressInfo } from "node:net";
import { createServer, type RequestListener, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createLogger, inProcessDialer, MakinaError, type DeployStep, type LinkCredentials, type LinkDialer, type Logger } from "../proto/index.js";
import type { RelayConfig } from "./config.js";
import { relayPaths } from "./config.js";
import { WebSessions } from "./auth/index.js";
import { ControlPlane, ModelFiles, ModelInspector } from "./control/index.js";
import { EventBus } from "./events/index.js";
import { RequestLog, UsageRecorder } from "./usage/index.js";
import { RelayMetrics } from "./metrics/index.js";
import { Deployer } from "./deploy/index.js";
import { AgentRegistry, linkAcceptor, MachineLoads, type MachineLoad, loadLinkTls, publicKeyPin, shareLinkCertificates, startLinkServer } from "./link/index.js";
import { ADMIN_TOKEN_HASH, AdmissionGate, GatewayDirectory } from "./routing/index.js";
import { answerClientErrors } from "./http/client-error.js";
import { createRelayApp } from "./http/create-relay-app.js";
import { hashSecret, newSecret } from "./keys/index.js";
import { RateLimiter, RedisRateLimiter, type Limiter } from "./limits/index.js";
import { neverReachedDatabase, StorageHealth } from "./health/index.js";
import { openStore, type DatabaseLocation, type Store } from "./store/index.js";
import { randomBase62 } from "./ids/index.js";
import { AuditLog } from "./audit/index.js";
import { ChangeFeed, joinFleet, type Fleet } from "./cluster/index.js";
import { lockDataDir } from "./data-dir-lock.js";

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
  /**
   * Stops accepting connections, lets the requests in flight finish (up to `drainTimeoutMs`), then ends the
   * links, the remaining connections and the database. Idempotent.
   */
  stop(): Promise<void>;
}

/**
 * The admin token: read from the data directory, or made on first start (mode 0600); the database keeps its
 * hash, which is what every relay checks. With SQLite the file is the truth (replace it to change the token).
 * On PostgreSQL the token is the deployment's: the first relay makes it, and a relay whose data directory has
 * no copy of it (or another one) accepts the deployment's all the same, and says so; it returns null then.
 */
async function ensureAdminToken(store: Store, dataDir: string, log: Logger): Promise<string | null> {
  const file = relayPaths(dataDir).adminToken;
  const stored = await store.settings.get(ADMIN_TOKEN_HASH);
  const shared = store.dialect === "postgres";
  if (existsSync(file)) {
    const token = readFileSync(file, "utf8").trim();
    const hash = hashSecret(token);
    if (stored === hash) return token;
    if (!shared) {
      await store.settings.set(ADMIN_TOKEN_HASH, hash);
      return token;
    }
    if (stored === undefined && (await store.settings.setIfAbsent(ADMIN_TOKEN_HASH, hash))) return token;
    log.warn(`${file} is not this deployment's admin token: the relays on this database accept the token another relay made; copy that relay's admin-token file here`);
    return null;
  }
  const token = newSecret("mk_admin_");
  const hash = hashSecret(token);
  if (!shared) await store.settings.set(ADMIN_TOKEN_HASH, hash);
  else if (!(await store.settings.setIfAbsent(ADMIN_TOKEN_HASH, hash))) {
    log.info(`this relay accepts the deployment's admin token, made by another relay; copy that relay's admin-token file to ${file} for makina admin --data-dir here`);
    return null;
  }
  writeFileSync(file, token + "\n", { mode: 0o600 });
  chmodSync(file, 0o600);
  return token;
}

/** Composition root of the relay: store, link server, deployer, HTTP app. */
export async function startRelay(config: RelayConfig, options: { log?: Logger } = {}): Promise<Relay> {
  const log = (options.log ?? createLogger({ level: config.logLevel, format: config.logFormat })).child({ component: "relay" });
  // Read before anything opens: a missing or short token stops the start with the reason.
  const metricsTokenHash = config.metricsTokenFile === null ? undefined : readMetricsToken(config.metricsTokenFile);
  const lock = lockDataDir(config.dataDir);
  let store: Store;
  let directory: GatewayDirectory;
  let adminToken: string | null;
  let feed: ChangeFeed | undefined;
  const registry = new AgentRegistry();
  const loads = new MachineLoads();
  const events = new EventBus();
  // This process among the relays on one database (new at every start).
  const relayId = `rly_${randomBase62(12)}`;
  // Known once the listeners are up (below); other relays read them from the relays table.
  let relayUrl = "";
  let linkAddress = "";
  const storage = new StorageHealth(log.child({ component: "storage" }));
  // Told of users disabled, re-roled or deleted through other relays, once the web sessions exist (below).
  let userChanged: (userId: string) => void = () => {};
  try {
    const location: DatabaseLocation = config.database ? { kind: "postgres", url: config.database } : { kind: "sqlite", file: relayPaths(config.dataDir).database };
    store = await openStore(location, { onWriteError: (what, err) => storage.failed(what, err), relayId });
    try {
      if (store.migrated > 0) log.info("database schema brought up to date", { database: store.dialect, migrations: store.migrated });
      // One relay per SQLite file (the data directory's lock): no link exists yet, so no machine is online. On
      // PostgreSQL other relays may hold links: the change feed marks offline those of relays gone.
      if (location.kind === "sqlite") await storage.attempt("machine states", () => store.machines.markAllOffline());
      adminToken = await ensureAdminToken(store, config.dataDir, log);
      directory = await GatewayDirectory.open(store, log.child({ component: "directory" }));
      if (location.kind === "postgres") {
        const d = directory;
        feed = await ChangeFeed.start({
          url: location.url,
          relayId,
          describe: () => ({ url: relayUrl || null, linkAddress: linkAddress || null }),
          store,
          directory: d,
          leaseMs: config.changeLeaseMs,
          hooks: {
            machineChanged: (machineId) => registry.get(machineId)?.end(),
            userChanged: (userId) => userChanged(userId),
            machinesOffline: (machines) => machines.forEach((m) => events.emit({ type: "machine", orgId: m.orgId, machineId: m.id })),
            caughtUp: async () => {
              // A machine revoked or given a new token while this relay could not hear keeps no link here.
              await Promise.all(
                registry.all().map(async (s) => {
                  if (!(await s.credentialsHold())) s.end("This machine was revoked or given a new token; run its new install command.");
                }),
              );
              // Another relay may have taken this one for gone and marked its machines offline.
              await store.machines.markHeld(registry.all().filter((s) => s.state === "open").map((s) => s.machineId));
            },
          },
          log: log.child({ component: "changes" }),
        }).catch((err: unknown) => {
          d.close();
          throw err;
        });
        // Every write answers once every other relay has it (or has stopped serving from memory); a write that
        // never reached PostgreSQL changed nothing to wait for.
        const f = feed;
        store.notices.listen((_change, failure) => (failure !== undefined && neverReachedDatabase(failure) ? undefined : f.barrier()));
      }
    } catch (err) {
      await store.close();
      throw err;
    }
  } catch (err) {
    lock.release();
    throw err;
  }
  const gate = new AdmissionGate({
    maxInFlightPerStack: config.maxInFlightPerStack,
    maxInFlightPerMachine: config.maxInFlightPerMachine,
    maxQueuePerStack: config.maxQueuePerStack,
    queueTimeoutMs: config.queueTimeoutMs,
  });
  // Relays on one database reach each other's machines over NATS: a relay that cannot reach it at start does not
  // start (saying so), before it takes any link.
  let fleet: Fleet | undefined;
  try {
    const peer = config.nats && config.peerAddress !== "off" ? { ...peerListenAddress(config), secret: await peerSecret(store), maxMessageChars: 2 * config.bodyLimitBytes + 1024 * 1024 } : undefined;
    fleet = config.nats ? await joinFleet({ url: config.nats, relayId, registry, loads, gate, events, log: log.child({ component: "fleet" }), queueTimeoutMs: config.queueTimeoutMs, peer }) : undefined;
  } catch (err) {
    await feed?.stop();
    directory.close();
    await store.close();
    lock.release();
    throw new Error(`Cannot reach NATS (--nats / MAKINA_NATS_URL): ${String(err)}`);
  }
  const limiter: Limiter = config.redis ? await RedisRateLimiter.connect(config.redis, log.child({ component: "limits" })) : new RateLimiter();
  if (limiter instanceof RedisRateLimiter) {
    // Limits shared by every relay from the first request on; a Redis that does not answer yet is not a reason
    // to stay down: this relay applies limits on its own meanwhile, logged and in /health.
    await limiter.ready(5000).catch((err: unknown) => log.warn("starting with rate limits per relay: Redis does not answer yet", { error: String(err) }));
  }

  const usage = new UsageRecorder(store.db, { onWriteError: (err) => storage.failed("usage counts", err) });
  const requests = new RequestLog(store, {
    retentionMs: config.requestLogDays * 86_400_000,
    keepPerOrg: config.requestLogRows,
    onWriteError: (what, err) => storage.failed(what, err),
    onDropped: (count) => log.warn("requests went unlogged: more came than the database took in time", { count }),
  });
  // Several relays share a PostgreSQL database: each one's series carry its id.
  const metrics = new RelayMetrics({ machinesOnline: () => registry.size, relayId: store.dialect === "postgres" ? relayId : undefined, otherRelays: fleet?.relays });
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
  const loopbackOnly = ["127.0.0.1", "localhost", "::1"].includes(config.grpcHost);
  const tlsOn = config.grpcTls === "on" || (config.grpcTls === "auto" && !loopbackOnly);
  const givenCertificate = config.grpcTlsCert && config.grpcTlsKey ? { certFile: config.grpcTlsCert, keyFile: config.grpcTlsKey } : undefined;
  // Relays on one database present one CA: the fingerprint an install command pins holds for each of them.
  if (tlsOn && !givenCertificate && store.dialect === "postgres") await shareLinkCertificates(store, config.dataDir, log);
  const tls = tlsOn ? loadLinkTls(config.dataDir, givenCertificate) : undefined;
  if (!tlsOn && !loopbackOnly) log.warn("the agents' link is plaintext on a public address: prompts, answers and machine tokens cross the network unencrypted", { grpcHost: config.grpcHost });
  const link = await startLinkServer({ accept, registry, host: config.grpcHost, port: config.grpcPort, tls });
  const linkCaSha256 = tls?.caSha256 ?? null;
  const linkHost = config.grpcHost === "0.0.0.0" || config.grpcHost === "::" ? "127.0.0.1" : config.grpcHost;
  linkAddress = config.publicGrpcAddress ?? `${linkHost}:${link.port}`;
  let install: { url: string; pin: string } | null = null;
  // A model file named by a local path is looked for on its machine: over this relay's link, or the relay's holding it.
  const checkHere = (machineId: string, step: Extract<DeployStep, { kind: "checkModel" }>, signal?: AbortSignal) => {
    const session = registry.get(machineId);
    if (!session || session.state !== "open") return Promise.reject(new MakinaError("machine_offline", "The machine is not linked to this relay."));
    return session.runCommand("", step, { signal, idleTimeoutMs: 5000 });
  };
  const checkElsewhere = fleet?.serveModelFiles((machineId, step) => checkHere(machineId, step));
  const modelFiles = new ModelFiles((machineId, step, signal) => (registry.get(machineId)?.state === "open" ? checkHere(machineId, step, signal) : checkElsewhere?.(machineId, step)));
  const control = new ControlPlane(
    store,
    deployer,
    () => ({ address: linkAddress, tls: tlsOn, caSha256: linkCaSha256, relayUrl, install, otherAddresses: feed ? () => feed.linkAddresses() : undefined }),
    events,
    new ModelInspector({ hubEndpoint: config.hfEndpoint }),
    (machineId) => registry.get(machineId)?.end(),
    modelFiles,
  );

  const audit = new AuditLog(store, log.child({ component: "audit" }), {
    retentionMs: config.auditRetentionDays * 86_400_000,
    onWriteError: (what, err) => storage.failed(what, err),
  });
  const sessions = new WebSessions(store, { audit });
  userChanged = (userId) => sessions.userChanged(userId);
  const apps = createRelayApp({
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
  }, { separateAdmin: config.adminPort !== "shared", separateInstall: tls !== undefined });
  const https = config.tlsCert !== null && config.tlsKey !== null;
  const tlsFiles = https ? { cert: readFileSync(config.tlsCert!), key: readFileSync(config.tlsKey!) } : undefined;
  /** One HTTP(S) listener; resolves with its server and URL. */
  const listen = async (handler: RequestListener, host: string, port: number, ownTls: { cert: Buffer; key: Buffer } | undefined = tlsFiles) => {
    // Slow clients cannot hold the relay: the headers must arrive within headerTimeoutMs and the whole request
    // (body included) within bodyTimeoutMs, or the connection gets 408; connections beyond maxConnections are refused.
    const timeouts = { headersTimeout: config.headerTimeoutMs, requestTimeout: config.bodyTimeoutMs, connectionsCheckingInterval: Math.min(1000, config.headerTimeoutMs) };
    const s: Server = ownTls ? createHttpsServer({ ...ownTls, ...timeouts }, handler) : createServer(timeouts, handler);
    s.keepAliveTimeout = 65_000;
    s.maxConnections = config.maxConnections;
    answerClientErrors(s);
    await new Promise<void>((resolve, reject) => {
      s.once("error", reject);
      s.listen(port, host, () => resolve());
    });
    const p = (s.address() as AddressInfo).port;
    return { server: s, port: p, url: `${ownTls ? "https" : "http"}://${host.includes(":") ? `[${host}]` : host}:${p}` };
  };
  const main = await listen(apps.public, config.host, config.port);
  const admin = apps.admin && config.adminPort !== "shared" ? await listen(apps.admin, config.adminHost, config.adminPort) : undefined;
  // What joining machines fetch, over TLS with the link's certificate, on the link's host: the install command
  // pins its key, so a machine checks whom it talks to before the token or anything else crosses the network.
  const installer = apps.install && tls ? await listen(apps.install, config.grpcHost, config.installPort, { cert: tls.certChain, key: tls.privateKey }) : undefined;
  if (installer && tls) {
    const linkHostName = linkAddress.slice(0, linkAddress.lastIndexOf(":"));
    install = { url: `https://${linkHostName}:${installer.port}`, pin: publicKeyPin(tls.privateKey) };
  }
  const servers = [main.server, ...(admin ? [admin.server] : []), ...(installer ? [installer.server] : [])];
  // Passwords, session cookies and the admin token reach the admin listener: beyond loopback, in the clear,
  // unless a proxy this relay trusts terminates TLS in front of it.
  const adminHost = admin ? config.adminHost : config.host;
  if (!https && !config.trustProxy && !isLoopbackHost(adminHost)) {
    log.warn("the admin API, sign-in and the web application answer beyond loopback without TLS: passwords, session cookies and the admin token cross the network in the clear; give the relay a certificate (MAKINA_TLS_CERT, MAKINA_TLS_KEY) or put it behind a TLS proxy it trusts (MAKINA_TRUST_PROXY)", { host: adminHost });
  }
  const { url, port: httpPort } = main;
  const everyAddress = config.host === "0.0.0.0" || config.host === "::";
  relayUrl = config.publicUrl ?? (everyAddress ? url.replace(`//${config.host.includes(":") ? `[${config.host}]` : config.host}:`, `//${hostname()}:`) : url);
  const adminUrl = admin?.url ?? url;
  await storage.attempt("this relay's addresses", async () => feed?.announce());
  // Lets `makina admin --data-dir` on this host find the relay (its admin API is at admin_url). Readable by this
  // user only, as its neighbours (the database, the admin token) are; an older file is made so too.
  const info = relayPaths(config.dataDir).info;
  writeFileSync(
    info,
    JSON.stringify({ url, admin_url: adminUrl, link_address: linkAddress, link_tls: tlsOn, link_ca_sha256: linkCaSha256, install_url: install?.url ?? null, install_pin: install?.pin ?? null, pid: process.pid }, null, 2) + "\n",
    { mode: 0o600 },
  );
  chmodSync(info, 0o600);
  log.info("relay listening", { url, adminUrl, grpcPort: link.port, linkTls: tlsOn, linkCaSha256, installUrl: install?.url ?? null, dataDir: config.dataDir });

  let stopping: Promise<void> | undefined;
  return {
    config,
    url,
    adminUrl,
    httpPort,
    grpcPort: link.port,
    linkAddress,
    linkTls: tlsOn,
    linkCaSha256,
    install,
    store,
    registry,
    deployer,
    control,
    events,
    usage,
    gate,
    adminToken,
    inProcessDialer: (credentials) => inProcessDialer(accept, credentials),
    stop() {
      stopping ??= (async () => {
        const closed = Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
        events.close();
        fleet?.drain();
        // Requests waiting their turn in the admission queues count too: they are let in as others finish.
        // And requests crossing relays: sent to others from here, and served here for others (on the links too).
        const inFlight = () => registry.all().reduce((n, s) => n + s.inFlight, 0) + gate.waiting + (fleet?.inFlight ?? 0);
        log.info("relay stopping: no new connections; draining requests in flight", { inFlight: inFlight(), graceMs: config.drainTimeoutMs });
        const deadline = Date.now() + config.drainTimeoutMs;
        // Connections that go idle (their answer sent) are closed as they do, so keep-alive clients move on.
        while (inFlight() > 0 && Date.now() < deadline) {
          for (const s of servers) s.closeIdleConnections();
          await sleep(50);
        }
        if (inFlight() > 0) log.warn("drain period over: ending requests still in flight", { inFlight: inFlight() });
        for (const s of servers) s.closeIdleConnections();
        await fleet?.close();
        await link.stop();
        const force = setTimeout(() => servers.forEach((s) => s.closeAllConnections()), 2_000);
        await closed;
        clearTimeout(force);
        // Off the relays table once nothing more is served (admin writes answered too): writers stop waiting for it.
        await feed?.stop();
        // Counts the database still refuses are lost with the process: said so in the log, the stop goes on.
        await storage.attempt("usage counts", () => usage.close());
        await storage.attempt("the request log", () => requests.close());
        await audit.close();
        directory.close();
        await limiter.close?.();
        await store.close();
        lock.release();
        log.info("relay stopped");
      })();
      return stopping;
    },
  };
}

/** Where the relay takes the other relays' direct connections: `--peer-address`, or its HTTP host and any free port. */
function peerListenAddress(config: RelayConfig): { host: string; port: number } {
  if (config.peerAddress) {
    const at = config.peerAddress.lastIndexOf(":");
    return { host: config.peerAddress.slice(0, at).replace(/^\[(.*)\]$/, "$1"), port: Number(config.peerAddress.slice(at + 1)) };
  }
  if (config.host === "localhost") return { host: "127.0.0.1", port: 0 };
  if (config.host !== "0.0.0.0" && config.host !== "::") return { host: config.host, port: 0 };
  // Listening on every address: the first address other machines can reach.
  const external = Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === "IPv4" && !a.internal);
  return { host: external?.address ?? "127.0.0.1", port: 0 };
}

/** The secret the relays on one database share, for their direct connections (made by the first relay). */
async function peerSecret(store: Store): Promise<string> {
  await store.settings.setIfAbsent(PEER_SECRET, randomBytes(32).toString("base64url"));
  const secret = await store.settings.get(PEER_SECRET);
  if (!secret) throw new Error("the relays' shared secret could not be read from the database");
  return secret;
}

/** The setting holding that secret. */
const PEER_SECRET = "peer_secret";

/** Whether a listening host is reachable from this machine only. */
function isLoopbackHost(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\./.test(host);
}

/** The hash of the scrape token in `file` (16 characters or more, surrounding whitespace ignored). */
function readMetricsToken(file: string): string {
  let token: string;
  try {
    token = readFileSync(file, "utf8").trim();
  } catch (err) {
    throw new Error(`MAKINA_METRICS_TOKEN_FILE: cannot read ${file} (${(err as Error).message})`);
  }
  if (token.length < 16) throw new Error(`MAKINA_METRICS_TOKEN_FILE: the token in ${file} must be 16 characters or more (openssl rand -hex 32 > ${file})`);
  return hashSecret(token);
}
