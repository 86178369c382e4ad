import { join, resolve } from "node:path";
import { clusterProblems, openBusProblem } from "./cluster-config.js";
import { isLinkAddress } from "./link/index.js";
import { SECRETS_KEY_FORMAT, SECRETS_KEY_SHAPE } from "./vault/index.js";

/** The relay's resolved, validated configuration. */
export interface RelayConfig {
  /** Where the SQLite file (without `database`), the admin token and the link's CA live. @default "./.makina" */
  readonly dataDir: string;
  /**
   * A PostgreSQL database (`postgres://user:pass@host:5432/makina`) for the relay's state, shared by every
   * relay given it (docs/scale-out.md); null for SQLite in the data directory. @default null
   */
  readonly database: string | null;
  /**
   * On PostgreSQL: how long the relay serves from memory without hearing from the database's change feed (a
   * PostgreSQL restart shorter than this is not seen by clients), and the longest an admin write waits for a
   * relay that does not confirm it (relay/cluster/change-feed.ts). @default 10000
   */
  readonly changeLeaseMs: number;
  /**
   * A Redis server (`redis://[:pass@]host:6379[/db]`, `rediss://` for TLS) that keeps the keys' rate-limit
   * windows, so limits hold across relays; null for limits in this relay's memory. @default null
   */
  readonly redis: string | null;
  /**
   * A NATS server (`nats://[user:pass@]host:4222`, `tls://` for TLS) the relays on one PostgreSQL database
   * reach each other through, so a request for a machine linked to another relay is served through it; null
   * for this relay's own links only. Needs `database`. @default null
   */
  readonly nats: string | null;
  /**
   * With `nats`: a NATS credentials file (a user JWT and its NKey seed, as `nsc` writes it) this relay
   * authenticates to NATS with, instead of or besides credentials in the URL. @default null
   */
  readonly natsCreds: string | null;
  /**
   * With `nats`: join a NATS server beyond loopback that is given neither credentials (in the URL or
   * `natsCreds`) nor TLS (`tls://`). Refused without this: anyone who reaches such a server sees which machines
   * the relays hold and can flood it. The relays' messages are sealed either way. @default false
   */
  readonly natsInsecure: boolean;
  /**
   * A file holding the secrets key: the key the relay's secrets (the relays' shared secret, the link's CA and
   * install keys) are sealed with in the database, which never holds it. By default the data directory's
   * `secrets.key`, made on the first start on a database that names no key (docs/security.md). @default null
   */
  readonly secretsKeyFile: string | null;
  /** The secrets key itself, from the environment only (`MAKINA_SECRETS_KEY`): a flag would show in `ps`. @default null */
  readonly secretsKey: string | null;
  /**
   * With `nats`: where this relay takes the other relays' direct connections (`host:port`, port 0 for any free
   * one), announced to them over NATS, so a request crossing relays takes one TCP hop each way instead of two
   * through NATS; `off` for NATS only. By default the HTTP host (the first non-loopback IPv4 address of this
   * machine when it listens on every address) and any free port. @default null
   */
  readonly peerAddress: string | null;
  /** HTTP listen host. @default "127.0.0.1" */
  readonly host: string;
  /** HTTP port; 0 picks a free one. @default 8080 */
  readonly port: number;
  /** The URL machines reach the gateway at, as install commands print it. @default this relay's URL (its host name when it listens on every address) */
  readonly publicUrl: string | null;
  /** Where the admin API and the web application listen when they have their own listener. @default "127.0.0.1" */
  readonly adminHost: string;
  /**
   * The admin listener's port, or `shared` to serve the admin API and web application on the gateway's own
   * listener. By default they share it while the gateway listens on loopback only, and move to 8082 on
   * loopback when the gateway listens publicly. 0 picks a free port.
   */
  readonly adminPort: number | "shared";
  /**
   * Behind a reverse proxy on this host: take the client's address and scheme from the proxy's
   * `X-Forwarded-For`/`X-Forwarded-Proto` when the request comes from loopback. @default false
   */
  readonly trustProxy: boolean;
  /**
   * A file holding a token (16 characters or more) that reads `/metrics` and nothing else, for a scraper that
   * should not hold the admin token. @default null (the admin token only)
   */
  readonly metricsTokenFile: string | null;
  /** A certificate chain (PEM) and key: the gateway, admin API and web application serve HTTPS. */
  readonly tlsCert: string | null;
  readonly tlsKey: string | null;
  /** gRPC listen host for agents. @default "0.0.0.0" */
  readonly grpcHost: string;
  /** gRPC port for agents; 0 picks a free one. @default 8081 */
  readonly grpcPort: number;
  /**
   * TLS on the agents' link: `on`, `off`, or `auto` (on unless the link listens on loopback only). With no
   * certificate given, the relay makes a private CA and a server certificate on first start. @default "auto"
   */
  readonly grpcTls: "auto" | "on" | "off";
  /** A certificate (chain, PEM) and key for the link instead of the relay's own CA. */
  readonly grpcTlsCert: string | null;
  readonly grpcTlsKey: string | null;
  /**
   * With TLS on the link: the port of the install listener, where joining machines fetch the install script and
   * the agent package and check their token over HTTPS with the link's certificate, whose key the install command
   * pins (on the link's host). @default 8083 (0, any free port, when `grpcPort` is 0)
   */
  readonly installPort: number;
  /** Address agents should dial, as printed in install commands. @default "<host>:<grpcPort>" */
  readonly publicGrpcAddress: string | null;
  /**
   * Heartbeat interval asked of agents, ms; a link silent for 3.5 of them is dropped. Every 5 s rather than
   * every second: 10,000 machines cost the relays a fifth of the messages, and a relay or machine busy for a
   * few seconds (thousands relinking at once) does not see live links as silent and drop them, which would
   * only bring them all back. @default 5000
   */
  readonly heartbeatIntervalMs: number;
  /** Largest request body, bytes. @default 4 MiB */
  readonly bodyLimitBytes: number;
  /** Time to first token before 503 `runtime_unavailable`, ms. @default 120000 */
  readonly firstTokenTimeoutMs: number;
  /** Time a client has to send a request's headers, ms (slowloris). @default 20000 */
  readonly headerTimeoutMs: number;
  /** Time a client has to send a whole request, body included, ms. @default 60000 */
  readonly bodyTimeoutMs: number;
  /** Most HTTP connections open at once per listener; more are refused. @default 10000 */
  readonly maxConnections: number;
  /** A deployment step the machine reports nothing of (no progress, no result) for this long fails, ms. @default 1800000 */
  readonly deployStepTimeoutMs: number;
  /** On stop, how long requests in flight may take to finish before links and connections are cut, ms. @default 30000 */
  readonly drainTimeoutMs: number;
  /** A request whose runtime produces nothing for this long after its first token ends with `stream_incomplete`, ms. @default 60000 */
  readonly streamIdleTimeoutMs: number;
  /** Longest non-streamed request, ms. @default 600000 */
  readonly requestTimeoutMs: number;
  /** How often the web application's live event stream sends a keepalive and checks its session again, ms. @default 15000 */
  readonly eventsKeepaliveMs: number;
  /** How long the audit log keeps an event, days. @default 365 */
  readonly auditRetentionDays: number;
  /** How long the request log keeps a request, days. @default 30 */
  readonly requestLogDays: number;
  /** The most requests the request log keeps per organization (the newest). @default 100000 */
  readonly requestLogRows: number;
  /** Requests one stack runs at once; more wait in its queue. @default 64 */
  readonly maxInFlightPerStack: number;
  /** Requests one machine runs at once, all its stacks together. @default 256 */
  readonly maxInFlightPerMachine: number;
  /** Requests that may wait for a stack; more get 503 at once. @default 256 */
  readonly maxQueuePerStack: number;
  /** Longest wait in a stack's queue before 503, ms. @default 30000 */
  readonly queueTimeoutMs: number;
  /** Completion tokens assumed when admitting a request without `max_tokens` against a token limit. @default 512 */
  readonly defaultCompletionEstimate: number;
  readonly logLevel: "debug" | "info" | "warn" | "error";
  /** Log lines as JSON, or readable (`text`); `auto`: readable in a terminal, JSON otherwise. @default "auto" */
  readonly logFormat: "auto" | "json" | "text";
  /** Where the Forge reads GGUF headers of `hf:` references (a mirror, like the agents'). @default "https://huggingface.co" */
  readonly hfEndpoint: string;
}

/** Raw inputs: command-line flags, environment (`MAKINA_*`), config file; in that precedence. */
export interface RelayConfigSources {
  flags?: Partial<Record<keyof RelayConfig, unknown>>;
  env?: Record<string, string | undefined>;
  file?: Partial<Record<keyof RelayConfig, unknown>>;
}

const ENV: Record<keyof RelayConfig, string> = {
  dataDir: "MAKINA_DATA_DIR",
  database: "MAKINA_DATABASE_URL",
  redis: "MAKINA_REDIS_URL",
  nats: "MAKINA_NATS_URL",
  natsCreds: "MAKINA_NATS_CREDS",
  natsInsecure: "MAKINA_NATS_INSECURE",
  secretsKeyFile: "MAKINA_SECRETS_KEY_FILE",
  secretsKey: "MAKINA_SECRETS_KEY",
  peerAddress: "MAKINA_PEER_ADDRESS",
  changeLeaseMs: "MAKINA_CHANGE_LEASE_MS",
  host: "MAKINA_HOST",
  port: "MAKINA_PORT",
  trustProxy: "MAKINA_TRUST_PROXY",
  publicUrl: "MAKINA_PUBLIC_URL",
  adminHost: "MAKINA_ADMIN_HOST",
  adminPort: "MAKINA_ADMIN_PORT",
  tlsCert: "MAKINA_TLS_CERT",
  metricsTokenFile: "MAKINA_METRICS_TOKEN_FILE",
  tlsKey: "MAKINA_TLS_KEY",
  grpcHost: "MAKINA_GRPC_HOST",
  grpcPort: "MAKINA_GRPC_PORT",
  installPort: "MAKINA_INSTALL_PORT",
  publicGrpcAddress: "MAKINA_PUBLIC_GRPC_ADDRESS",
  grpcTls: "MAKINA_GRPC_TLS",
  grpcTlsCert: "MAKINA_GRPC_TLS_CERT",
  grpcTlsKey: "MAKINA_GRPC_TLS_KEY",
  heartbeatIntervalMs: "MAKINA_HEARTBEAT_INTERVAL_MS",
  bodyLimitBytes: "MAKINA_BODY_LIMIT_BYTES",
  firstTokenTimeoutMs: "MAKINA_FIRST_TOKEN_TIMEOUT_MS",
  requestTimeoutMs: "MAKINA_REQUEST_TIMEOUT_MS",
  maxInFlightPerStack: "MAKINA_MAX_IN_FLIGHT_PER_STACK",
  maxInFlightPerMachine: "MAKINA_MAX_IN_FLIGHT_PER_MACHINE",
  maxQueuePerStack: "MAKINA_MAX_QUEUE_PER_STACK",
  queueTimeoutMs: "MAKINA_QUEUE_TIMEOUT_MS",
  streamIdleTimeoutMs: "MAKINA_STREAM_IDLE_TIMEOUT_MS",
  eventsKeepaliveMs: "MAKINA_EVENTS_KEEPALIVE_MS",
  auditRetentionDays: "MAKINA_AUDIT_RETENTION_DAYS",
  requestLogDays: "MAKINA_REQUEST_LOG_DAYS",
  requestLogRows: "MAKINA_REQUEST_LOG_ROWS",
  drainTimeoutMs: "MAKINA_DRAIN_TIMEOUT_MS",
  deployStepTimeoutMs: "MAKINA_DEPLOY_STEP_TIMEOUT_MS",
  headerTimeoutMs: "MAKINA_HEADER_TIMEOUT_MS",
  bodyTimeoutMs: "MAKINA_BODY_TIMEOUT_MS",
  maxConnections: "MAKINA_MAX_CONNECTIONS",
  defaultCompletionEstimate: "MAKINA_DEFAULT_COMPLETION_ESTIMATE",
  logLevel: "MAKINA_LOG_LEVEL",
  logFormat: "MAKINA_LOG_FORMAT",
  hfEndpoint: "HF_ENDPOINT",
};

const DEFAULTS: Omit<RelayConfig, "dataDir"> & { dataDir: string } = {
  dataDir: ".makina",
  database: null,
  redis: null,
  nats: null,
  natsCreds: null,
  natsInsecure: false,
  secretsKeyFile: null,
  secretsKey: null,
  peerAddress: null,
  changeLeaseMs: 10_000,
  host: "127.0.0.1",
  port: 8080,
  trustProxy: false,
  publicUrl: null,
  adminHost: "127.0.0.1",
  adminPort: "shared",
  tlsCert: null,
  metricsTokenFile: null,
  tlsKey: null,
  grpcHost: "0.0.0.0",
  grpcPort: 8081,
  installPort: 8083,
  publicGrpcAddress: null,
  grpcTls: "auto",
  grpcTlsCert: null,
  grpcTlsKey: null,
  heartbeatIntervalMs: 5000,
  bodyLimitBytes: 4 * 1024 * 1024,
  firstTokenTimeoutMs: 120_000,
  requestTimeoutMs: 600_000,
  maxInFlightPerStack: 64,
  maxInFlightPerMachine: 256,
  maxQueuePerStack: 256,
  queueTimeoutMs: 30_000,
  streamIdleTimeoutMs: 60_000,
  eventsKeepaliveMs: 15_000,
  auditRetentionDays: 365,
  requestLogDays: 30,
  requestLogRows: 100_000,
  drainTimeoutMs: 30_000,
  deployStepTimeoutMs: 30 * 60_000,
  headerTimeoutMs: 20_000,
  bodyTimeoutMs: 60_000,
  maxConnections: 10_000,
  defaultCompletionEstimate: 512,
  logLevel: "info",
  logFormat: "auto",
  hfEndpoint: "https://huggingface.co",
};

/** How a setting is given, as a failed start names it: `--install-port or MAKINA_INSTALL_PORT`. */
export function settingOf(key: keyof RelayConfig): string {
  return `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} or ${ENV[key]}`;
}

/** Thrown when configuration is invalid; lists every problem at once. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join("\n  - ")}`);
    this.name = "ConfigError";
  }
}

/** Resolves flags > env > file > defaults into a frozen, validated config. */
export function resolveRelayConfig(sources: RelayConfigSources = {}): RelayConfig {
  const problems: string[] = [];
  const pick = (k: keyof RelayConfig): unknown => {
    const f = sources.flags?.[k];
    if (f !== undefined) return f;
    const e = sources.env?.[ENV[k]];
    if (e !== undefined && e !== "") return e;
    const file = sources.file?.[k];
    if (file !== undefined) return file;
    return DEFAULTS[k];
  };
  const int = (k: keyof RelayConfig, min: number, max: number): number => {
    const v = Number(pick(k));
    if (!Number.isInteger(v) || v < min || v > max) {
      problems.push(`${k} (${ENV[k]}) must be an integer from ${min} to ${max}, got ${JSON.stringify(pick(k))}`);
      return DEFAULTS[k] as number;
    }
    return v;
  };
  const str = (k: keyof RelayConfig): string => String(pick(k));
  const logLevel = str("logLevel");
  if (!["debug", "info", "warn", "error"].includes(logLevel)) problems.push(`logLevel (${ENV.logLevel}) must be debug, info, warn or error`);
  const logFormat = str("logFormat");
  if (!["auto", "json", "text"].includes(logFormat)) problems.push(`logFormat (${ENV.logFormat}) must be auto, json or text`);
  const grpcTls = str("grpcTls");
  if (!["auto", "on", "off"].includes(grpcTls)) problems.push(`grpcTls (${ENV.grpcTls}) must be auto, on or off`);
  const optionalPath = (k: keyof RelayConfig): string | null => (pick(k) === null ? null : resolve(str(k)));
  const grpcTlsCert = optionalPath("grpcTlsCert");
  const grpcTlsKey = optionalPath("grpcTlsKey");
  if ((grpcTlsCert === null) !== (grpcTlsKey === null)) problems.push("grpcTlsCert and grpcTlsKey go together: give both, or neither");
  if (grpcTlsCert && grpcTls === "off") problems.push("grpcTlsCert is given but grpcTls is off");
  const tlsCert = optionalPath("tlsCert");
  const tlsKey = optionalPath("tlsKey");
  // Both go into the install command a person runs as root: a host (and port), nothing else.
  const publicHost = /^https?:\/\/(.+)$/.exec(str("publicUrl").replace(/\/+$/, ""))?.[1];
  if (pick("publicUrl") !== null && !(publicHost && (isLinkAddress(publicHost) || isLinkAddress(`${publicHost}:443`)))) problems.push(`publicUrl (${ENV.publicUrl}) must be an http(s) URL without a path, such as https://makina.example.com`);
  if (pick("publicGrpcAddress") !== null && !isLinkAddress(str("publicGrpcAddress"))) problems.push(`publicGrpcAddress (${ENV.publicGrpcAddress}) must be host:port, such as relay.example.com:8081`);
  if ((tlsCert === null) !== (tlsKey === null)) problems.push("tlsCert and tlsKey go together: give both, or neither");
  const orNull = (k: keyof RelayConfig): string | null => (pick(k) === null ? null : str(k));
  const [database, redis, nats, peerAddress] = [orNull("database"), orNull("redis"), orNull("nats"), orNull("peerAddress")];
  problems.push(...clusterProblems(database, redis, nats, peerAddress, ENV));
  const natsCreds = optionalPath("natsCreds");
  const natsInsecure = [true, "true", "1"].includes(pick("natsInsecure") as string | boolean);
  if (natsCreds !== null && nats === null) problems.push(`natsCreds (${ENV.natsCreds}) is given without nats (${ENV.nats})`);
  const openBus = nats !== null ? openBusProblem(nats, natsCreds !== null, ENV) : null;
  if (openBus && !natsInsecure) problems.push(openBus);
  const secretsKeyFile = optionalPath("secretsKeyFile");
  // The key only from the environment; never echoed in an error.
  const secretsKey = sources.env?.[ENV.secretsKey]?.trim() || null;
  if (secretsKey !== null && secretsKeyFile !== null) problems.push(`give the secrets key one way: secretsKeyFile (${ENV.secretsKeyFile}) or ${ENV.secretsKey}, not both`);
  if (secretsKey !== null && !SECRETS_KEY_SHAPE.test(secretsKey)) problems.push(`${ENV.secretsKey} is not a secrets key: it must be ${SECRETS_KEY_FORMAT}`);
  if (!/^https?:\/\/[^/]/.test(str("hfEndpoint"))) problems.push(`hfEndpoint (${ENV.hfEndpoint}) must be an http(s) URL, got ${JSON.stringify(str("hfEndpoint"))}`);
  const loopback = (h: string) => ["127.0.0.1", "localhost", "::1"].includes(h);
  const adminPort = (): number | "shared" => {
    const given = sources.flags?.adminPort ?? sources.env?.[ENV.adminPort] ?? sources.file?.adminPort;
    if (given === undefined || given === "") return loopback(str("host")) ? "shared" : 8082;
    if (given === "shared") return "shared";
    return int("adminPort", 0, 65535);
  };
  const installPort = (): number => {
    const given = sources.flags?.installPort ?? sources.env?.[ENV.installPort] ?? sources.file?.installPort;
    if (given === undefined || given === "") return Number(pick("grpcPort")) === 0 ? 0 : 8083;
    return int("installPort", 0, 65535);
  };
  const config: RelayConfig = {
    dataDir: resolve(str("dataDir")),
    database,
    redis,
    nats,
    natsCreds,
    natsInsecure: natsInsecure && openBus !== null,
    secretsKeyFile,
    secretsKey,
    peerAddress,
    changeLeaseMs: int("changeLeaseMs", 200, 600_000),
    host: str("host"),
    port: int("port", 0, 65535),
    trustProxy: [true, "true", "1"].includes(pick("trustProxy") as string | boolean),
    publicUrl: pick("publicUrl") === null ? null : str("publicUrl").replace(/\/+$/, ""),
    adminHost: str("adminHost"),
    adminPort: adminPort(),
    tlsCert,
    metricsTokenFile: optionalPath("metricsTokenFile"),
    tlsKey,
    grpcHost: str("grpcHost"),
    grpcPort: int("grpcPort", 0, 65535),
    installPort: installPort(),
    publicGrpcAddress: pick("publicGrpcAddress") === null ? null : str("publicGrpcAddress"),
    grpcTls: grpcTls as RelayConfig["grpcTls"],
    grpcTlsCert,
    grpcTlsKey,
    heartbeatIntervalMs: int("heartbeatIntervalMs", 100, 60_000),
    bodyLimitBytes: int("bodyLimitBytes", 1024, 1024 * 1024 * 1024),
    firstTokenTimeoutMs: int("firstTokenTimeoutMs", 100, 3_600_000),
    requestTimeoutMs: int("requestTimeoutMs", 100, 24 * 3_600_000),
    maxInFlightPerStack: int("maxInFlightPerStack", 1, 1_000_000),
    maxInFlightPerMachine: int("maxInFlightPerMachine", 1, 1_000_000),
    maxQueuePerStack: int("maxQueuePerStack", 0, 1_000_000),
    queueTimeoutMs: int("queueTimeoutMs", 1, 3_600_000),
    streamIdleTimeoutMs: int("streamIdleTimeoutMs", 100, 24 * 3_600_000),
    eventsKeepaliveMs: int("eventsKeepaliveMs", 100, 3_600_000),
    auditRetentionDays: int("auditRetentionDays", 1, 36_500),
    requestLogDays: int("requestLogDays", 1, 3650),
    requestLogRows: int("requestLogRows", 100, 100_000_000),
    drainTimeoutMs: int("drainTimeoutMs", 0, 3_600_000),
    deployStepTimeoutMs: int("deployStepTimeoutMs", 100, 24 * 3_600_000),
    headerTimeoutMs: int("headerTimeoutMs", 100, 600_000),
    bodyTimeoutMs: int("bodyTimeoutMs", 100, 3_600_000),
    maxConnections: int("maxConnections", 1, 1_000_000),
    defaultCompletionEstimate: int("defaultCompletionEstimate", 1, 1 << 20),
    logLevel: logLevel as RelayConfig["logLevel"],
    logFormat: logFormat as RelayConfig["logFormat"],
    hfEndpoint: str("hfEndpoint"),
  };
  if (config.headerTimeoutMs > config.bodyTimeoutMs) problems.push("headerTimeoutMs must not be above bodyTimeoutMs (the whole request includes its headers)");
  if (problems.length) throw new ConfigError(problems);
  return Object.freeze(config);
}

/** Paths inside the data directory. */
export const relayPaths = (dataDir: string) => ({
  database: join(dataDir, "makina.db"),
  adminToken: join(dataDir, "admin-token"),
  info: join(dataDir, "relay.json"),
});
