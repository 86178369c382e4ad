import { join, resolve } from "node:path";
import { clusterProblems, openBusProblem } from "./cluster-config.js";
import { printedAddressProblems, secretsKeyProblems } from "./config-checks.js";

import { TIER_AGING_MS } from "../proto/index.js";
import type { RelayConfig } from "./relay-config.js";

export type { RelayConfig };

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
  redisFail: "MAKINA_REDIS_FAIL",
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
  publicAddress: "MAKINA_PUBLIC_ADDRESS",
  grpcTls: "MAKINA_GRPC_TLS",
  grpcTlsCert: "MAKINA_GRPC_TLS_CERT",
  grpcTlsKey: "MAKINA_GRPC_TLS_KEY",
  heartbeatIntervalMs: "MAKINA_HEARTBEAT_INTERVAL_MS",
  bodyLimitBytes: "MAKINA_BODY_LIMIT_BYTES",
  firstTokenTimeoutMs: "MAKINA_FIRST_TOKEN_TIMEOUT_MS",
  loadTimeoutMs: "MAKINA_LOAD_TIMEOUT_MS",
  requestTimeoutMs: "MAKINA_REQUEST_TIMEOUT_MS",
  maxInFlightPerStack: "MAKINA_MAX_IN_FLIGHT_PER_STACK",
  maxInFlightPerMachine: "MAKINA_MAX_IN_FLIGHT_PER_MACHINE",
  maxQueuePerStack: "MAKINA_MAX_QUEUE_PER_STACK",
  queueTimeoutMs: "MAKINA_QUEUE_TIMEOUT_MS",
  flexQueueTimeoutMs: "MAKINA_FLEX_QUEUE_TIMEOUT_MS",
  queueAgingMs: "MAKINA_QUEUE_AGING_MS",
  alertsAllowPrivate: "MAKINA_ALERTS_ALLOW_PRIVATE",
  alertsFirstRetryMs: "MAKINA_ALERTS_FIRST_RETRY_MS",
  alertsCheckMs: "MAKINA_ALERTS_CHECK_MS",
  ssoAllowPrivate: "MAKINA_SSO_ALLOW_PRIVATE",
  ssoSessionHours: "MAKINA_SSO_SESSION_HOURS",
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
  maxStacksPerOrg: "MAKINA_MAX_STACKS_PER_ORG",
  maxKeysPerPerson: "MAKINA_MAX_KEYS_PER_PERSON",
  logLevel: "MAKINA_LOG_LEVEL",
  logFormat: "MAKINA_LOG_FORMAT",
  hfEndpoint: "HF_ENDPOINT",
  hfToken: "HF_TOKEN",
  hfTokenFile: "MAKINA_HF_TOKEN_FILE",
};

const DEFAULTS: Omit<RelayConfig, "dataDir"> & { dataDir: string } = {
  dataDir: ".makina",
  database: null,
  redis: null,
  redisFail: "open",
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
  publicAddress: null,
  grpcTls: "auto",
  grpcTlsCert: null,
  grpcTlsKey: null,
  heartbeatIntervalMs: 5000,
  bodyLimitBytes: 4 * 1024 * 1024,
  firstTokenTimeoutMs: 120_000,
  loadTimeoutMs: 300_000,
  requestTimeoutMs: 600_000,
  maxInFlightPerStack: 64,
  maxInFlightPerMachine: 256,
  maxQueuePerStack: 256,
  queueTimeoutMs: 30_000,
  flexQueueTimeoutMs: 600_000,
  queueAgingMs: TIER_AGING_MS,
  alertsAllowPrivate: false,
  alertsFirstRetryMs: 5000,
  alertsCheckMs: 15_000,
  ssoAllowPrivate: false,
  ssoSessionHours: 12,
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
  maxStacksPerOrg: 10_000,
  maxKeysPerPerson: 1000,
  logLevel: "info",
  logFormat: "auto",
  hfEndpoint: "https://huggingface.co",
  hfToken: null,
  hfTokenFile: null,
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
    return file !== undefined ? file : DEFAULTS[k];
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
  const redisFail = str("redisFail");
  if (!["open", "closed"].includes(redisFail)) problems.push(`redisFail (${ENV.redisFail}) must be open or closed`);
  const grpcTls = str("grpcTls");
  if (!["auto", "on", "off"].includes(grpcTls)) problems.push(`grpcTls (${ENV.grpcTls}) must be auto, on or off`);
  const optionalPath = (k: keyof RelayConfig): string | null => (pick(k) === null ? null : resolve(str(k)));
  const [grpcTlsCert, grpcTlsKey] = [optionalPath("grpcTlsCert"), optionalPath("grpcTlsKey")];
  if ((grpcTlsCert === null) !== (grpcTlsKey === null)) problems.push("grpcTlsCert and grpcTlsKey go together: give both, or neither");
  if (grpcTlsCert && grpcTls === "off") problems.push("grpcTlsCert is given but grpcTls is off");
  const [tlsCert, tlsKey] = [optionalPath("tlsCert"), optionalPath("tlsKey")];
  problems.push(...printedAddressProblems(pick("publicUrl") === null ? null : str("publicUrl"), pick("publicGrpcAddress") === null ? null : str("publicGrpcAddress"), pick("publicAddress") === null ? null : str("publicAddress"), ENV));
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
  problems.push(...secretsKeyProblems(secretsKey, secretsKeyFile, ENV));
  const hub = hubSettings(str("hfEndpoint"), sources.env?.[ENV.hfToken], optionalPath("hfTokenFile"), problems);
  const adminPort = (): number | "shared" => {
    const given = sources.flags?.adminPort ?? sources.env?.[ENV.adminPort] ?? sources.file?.adminPort;
    if (given === undefined || given === "") return ["127.0.0.1", "localhost", "::1"].includes(str("host")) ? "shared" : 8082;
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
    redisFail: redisFail as RelayConfig["redisFail"],
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
    publicAddress: pick("publicAddress") === null ? null : str("publicAddress").replace(/^\[(.*)\]$/, "$1"),
    grpcTls: grpcTls as RelayConfig["grpcTls"],
    grpcTlsCert,
    grpcTlsKey,
    heartbeatIntervalMs: int("heartbeatIntervalMs", 100, 60_000),
    bodyLimitBytes: int("bodyLimitBytes", 1024, 1024 * 1024 * 1024),
    firstTokenTimeoutMs: int("firstTokenTimeoutMs", 100, 3_600_000),
    loadTimeoutMs: int("loadTimeoutMs", 1000, 3_600_000),
    requestTimeoutMs: int("requestTimeoutMs", 100, 24 * 3_600_000),
    maxInFlightPerStack: int("maxInFlightPerStack", 1, 1_000_000),
    maxInFlightPerMachine: int("maxInFlightPerMachine", 1, 1_000_000),
    maxQueuePerStack: int("maxQueuePerStack", 0, 1_000_000),
    queueTimeoutMs: int("queueTimeoutMs", 1, 3_600_000),
    flexQueueTimeoutMs: int("flexQueueTimeoutMs", 1, 24 * 3_600_000),
    queueAgingMs: int("queueAgingMs", 1, 3_600_000),
    ...outboundSettings(pick, int),
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
    maxStacksPerOrg: int("maxStacksPerOrg", 1, 1_000_000),
    maxKeysPerPerson: int("maxKeysPerPerson", 1, 1_000_000),
    logLevel: logLevel as RelayConfig["logLevel"],
    logFormat: logFormat as RelayConfig["logFormat"],
    ...hub,
  };
  if (config.headerTimeoutMs > config.bodyTimeoutMs) problems.push("headerTimeoutMs must not be above bodyTimeoutMs (the whole request includes its headers)");
  if (problems.length) throw new ConfigError(problems);
  return Object.freeze(config);
}

/** The settings of what the relay sends out or signs in through: alert webhooks, identity providers. */
function outboundSettings(pick: (k: keyof RelayConfig) => unknown, int: (k: keyof RelayConfig, min: number, max: number) => number) {
  const yes = (k: keyof RelayConfig) => [true, "true", "1"].includes(pick(k) as string | boolean);
  return {
    alertsAllowPrivate: yes("alertsAllowPrivate"),
    alertsFirstRetryMs: int("alertsFirstRetryMs", 10, 3_600_000),
    alertsCheckMs: int("alertsCheckMs", 10, 3_600_000),
    ssoAllowPrivate: yes("ssoAllowPrivate"),
    ssoSessionHours: int("ssoSessionHours", 1, 24 * 30),
  };
}

/** Paths inside the data directory. */
export const relayPaths = (dataDir: string) => ({
  database: join(dataDir, "makina.db"),
  adminToken: join(dataDir, "admin-token"),
  info: join(dataDir, "relay.json"),
});

/**
 * The model hub's settings: its address (an http(s) URL, else a problem) and its token, from the environment only
 * (a flag would show in `ps`) or a file; the token is never echoed in an error.
 */
function hubSettings(hfEndpoint: string, token: string | undefined, hfTokenFile: string | null, problems: string[]): Pick<RelayConfig, "hfEndpoint" | "hfToken" | "hfTokenFile"> {
  if (!/^https?:\/\/[^/]/.test(hfEndpoint)) problems.push(`hfEndpoint (${ENV.hfEndpoint}) must be an http(s) URL, got ${JSON.stringify(hfEndpoint)}`);
  return { hfEndpoint, hfToken: token?.trim() || null, hfTokenFile };
}
