import { readFileSync } from "node:fs";
import { availableParallelism, homedir } from "node:os";
import { join, resolve } from "node:path";
import { DEFAULT_HF_ENDPOINT } from "./models/model-ref.js";
import { GGUF_FRAME_MS } from "./runtimes/gguf/gguf-wire.js";
import { MLX_PACKAGE, VLLM_PACKAGE } from "./runtimes/python-pins.js";
import { withoutSecrets } from "./runtimes/runtime-env.js";
import { parseMemoryBudget, type MemoryBudget } from "./stacks/memory-budget.js";

/** The agent's resolved, validated configuration. */
export interface AgentConfig {
  /** The relays' gRPC addresses as given, `host:port` or several joined by commas (for messages). */
  readonly server: string;
  /**
   * Every relay address the agent may link to (`--server` repeated, or comma-separated): it links to one, and
   * to the next when that one is lost or does not answer.
   */
  readonly servers: readonly string[];
  /** This machine's ID (`mach_…`). */
  readonly machineId: string;
  /** This machine's token (`mk_mach_…`); never logged. Read from `tokenFile` when given there. */
  readonly token: string;
  /** A file holding the token (so it never shows in `ps`). */
  readonly tokenFile: string | null;
  /** SHA-256 (hex) of the relay's own CA: the link is TLS, trusting that CA alone (from the install command). */
  readonly caSha256: string | null;
  /** A CA file to trust for the link's TLS (a relay given its own certificate by a private CA). */
  readonly caFile: string | null;
  /** TLS on the link, trusting the system's CAs (a relay with a publicly trusted certificate). @default false */
  readonly tls: boolean;
  /** Allow a plaintext link to an address that is not loopback. @default false */
  readonly insecure: boolean;
  /** Where downloaded models are cached. @default "~/.makina/agent" */
  readonly dataDir: string;
  /** CPU threads for inference, shared by every loaded model. @default cores − 1, at least 1 */
  readonly threads: number;
  /** GPU use: `auto` detects CUDA/Vulkan/Metal, `false` forces the CPU. @default "auto" */
  readonly gpu: "auto" | false;
  /** Largest context per sequence, tokens. @default 4096 */
  readonly maxContextSize: number;
  /** Requests one loaded model serves at once. @default 2 */
  readonly parallelSequences: number;
  /**
   * A GGUF model's streamed answers leave its process at most once per this many ms after their first token (the
   * tokens decoded meanwhile go together); 0 sends each token as it comes. @default 32
   */
  readonly streamIntervalMs: number;
  /** Reconnect backoff bounds, ms. @default 250 and 15000 */
  readonly reconnectMinMs: number;
  readonly reconnectMaxMs: number;
  /** What pip installs for vLLM (a pinned requirement). @default "vllm==0.20.0" */
  readonly vllmPackage: string;
  /** What pip installs for MLX. @default "mlx-lm==0.28.2" */
  readonly mlxPackage: string;
  /** Python used to create the virtual environments of vLLM and MLX. @default "python3" */
  readonly python: string;
  /** The local control socket (`doctor`, `info`, …). @default "<dataDir>/agent.sock" */
  readonly controlSocket: string;
  /** On stop, how long requests in flight may take to finish before they are cut, ms. @default 30000 */
  readonly drainTimeoutMs: number;
  /** How often hardware is detected again, ms (changes are sent to the relay). @default 60000 */
  readonly hardwareIntervalMs: number;
  /** How often the machine's load (CPU, memory, each GPU's utilization and memory) is sampled and sent, ms. @default 5000 */
  readonly loadIntervalMs: number;
  /** How often a ready runtime's process is probed, ms; 3 missed probes in a row restart it. @default 5000 */
  readonly healthIntervalMs: number;
  /** How long one probe may take, ms. @default 10000 */
  readonly healthTimeoutMs: number;
  /** Runtimes loaded at once on this machine, `always` stacks' included; 0: no limit. On-demand ones are unloaded to keep within it. @default 0 */
  readonly maxLoaded: number;
  /** The memory loaded runtimes may use together: a share of the GPUs' memory (else of RAM), or bytes; on-demand ones are unloaded to keep within it. @default { percent: 90 } */
  readonly memoryBudget: MemoryBudget;
  /** How long a request may wait for an on-demand stack's load (room made for it included), ms. @default 300000 */
  readonly loadTimeoutMs: number;
  /** The environment the agent's runtimes start from: the agent's own (`sources.env`) without its secrets. */
  readonly runtimeEnv: Readonly<Record<string, string>>;
  /** Where `hf:` model references resolve: Hugging Face or a mirror. @default "https://huggingface.co" */
  readonly hfEndpoint: string;
  /** A Hugging Face token for gated and private models, sent to `hfEndpoint` only; never logged. */
  readonly hfToken: string | undefined;
  /**
   * Host names the images of requests may be fetched from (`images.example.com`, `*.example.com`), comma
   * separated; also given to vLLM as `--allowed-media-domains`. @default [] (any public https host)
   */
  readonly allowedMediaDomains: readonly string[];
  readonly logLevel: "debug" | "info" | "warn" | "error";
  /** Log lines as JSON, or readable (`text`); `auto`: readable in a terminal, JSON otherwise (journald). @default "auto" */
  readonly logFormat: "auto" | "json" | "text";
}

/** Raw inputs: command-line flags, environment (`MAKINA_AGENT_*`), config file; in that precedence. */
export interface AgentConfigSources {
  flags?: Partial<Record<Setting, unknown>>;
  env?: Record<string, string | undefined>;
  file?: Partial<Record<Setting, unknown>>;
}

/** The settings read from flags, environment and file (the runtimes' environment is derived, not set). */
type Setting = Exclude<keyof AgentConfig, "runtimeEnv" | "servers">;

const ENV: Record<Setting, string> = {
  server: "MAKINA_AGENT_SERVER",
  machineId: "MAKINA_AGENT_MACHINE_ID",
  token: "MAKINA_AGENT_TOKEN",
  tokenFile: "MAKINA_AGENT_TOKEN_FILE",
  caSha256: "MAKINA_AGENT_CA_SHA256",
  caFile: "MAKINA_AGENT_CA_FILE",
  tls: "MAKINA_AGENT_TLS",
  insecure: "MAKINA_AGENT_INSECURE",
  dataDir: "MAKINA_AGENT_DATA_DIR",
  threads: "MAKINA_AGENT_THREADS",
  gpu: "MAKINA_AGENT_GPU",
  maxContextSize: "MAKINA_AGENT_MAX_CONTEXT",
  parallelSequences: "MAKINA_AGENT_PARALLEL",
  streamIntervalMs: "MAKINA_AGENT_STREAM_INTERVAL_MS",
  reconnectMinMs: "MAKINA_AGENT_RECONNECT_MIN_MS",
  reconnectMaxMs: "MAKINA_AGENT_RECONNECT_MAX_MS",
  controlSocket: "MAKINA_AGENT_SOCKET",
  python: "MAKINA_AGENT_PYTHON",
  vllmPackage: "MAKINA_AGENT_VLLM_PACKAGE",
  mlxPackage: "MAKINA_AGENT_MLX_PACKAGE",
  hardwareIntervalMs: "MAKINA_AGENT_HARDWARE_INTERVAL_MS",
  loadIntervalMs: "MAKINA_AGENT_LOAD_INTERVAL_MS",
  healthIntervalMs: "MAKINA_AGENT_HEALTH_INTERVAL_MS",
  healthTimeoutMs: "MAKINA_AGENT_HEALTH_TIMEOUT_MS",
  maxLoaded: "MAKINA_AGENT_MAX_LOADED",
  memoryBudget: "MAKINA_AGENT_MEMORY_BUDGET",
  loadTimeoutMs: "MAKINA_LOAD_TIMEOUT_MS",
  drainTimeoutMs: "MAKINA_AGENT_DRAIN_TIMEOUT_MS",
  hfEndpoint: "MAKINA_AGENT_HF_ENDPOINT",
  hfToken: "MAKINA_AGENT_HF_TOKEN",
  allowedMediaDomains: "MAKINA_AGENT_ALLOWED_MEDIA_DOMAINS",
  logLevel: "MAKINA_LOG_LEVEL",
  logFormat: "MAKINA_LOG_FORMAT",
};

/** How a setting is given, as a failed start names it: `--data-dir or MAKINA_AGENT_DATA_DIR` (the control socket has no flag). */
export function agentSettingOf(key: Setting): string {
  return key === "controlSocket" ? `${ENV.controlSocket} (or another --data-dir)` : `--${kebab(key)} or ${ENV[key]}`;
}

/** Other names honoured after Makina's: the variables Hugging Face's own tools read, and the load interval's name before it was one. */
const ENV_ALIASES: Partial<Record<Setting, string>> = { hfEndpoint: "HF_ENDPOINT", hfToken: "HF_TOKEN", loadIntervalMs: "MAKINA_AGENT_USAGE_INTERVAL_MS" };
/** A config file's keys by their former names, still read. */
const FILE_ALIASES: Partial<Record<Setting, string>> = { loadIntervalMs: "usageIntervalMs" };
const formerFileValue = (file: Record<string, unknown> | undefined, k: Setting): unknown => {
  const former = FILE_ALIASES[k];
  return former === undefined ? undefined : file?.[former];
};

/**
 * Inference threads that never oversubscribe the machine: one core is left for
 * the agent's event loop and the OS. ggml's spinning thread barriers collapse
 * (1000× slower) when threads outnumber free cores.
 */
export function defaultThreads(cores = availableParallelism()): number {
  return Math.max(1, cores - 1);
}

export class AgentConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid agent configuration:\n  - ${problems.join("\n  - ")}`);
    this.name = "AgentConfigError";
  }
}

/** A pip requirement for `name`: the name alone, or pinned (`==`, `>=`, …); nothing pip could take as an option or a URL. */
function isRequirement(v: string, name: string): boolean {
  return new RegExp(`^${name.replace("-", "[-_]")}(\\[[\\w,]+\\])?((==|>=|<=|~=|!=|<|>)[\\w.*+!-]+(,(==|>=|<=|~=|!=|<|>)[\\w.*+!-]+)*)?$`, "i").test(v);
}

/** The CA's fingerprint as 64 lower-case hex digits (colons dropped), or null when not given; a problem when it is not one. */
function fingerprintOf(raw: unknown, problems: string[]): string | null {
  const fingerprint = typeof raw === "string" ? raw.replaceAll(":", "").toLowerCase() : null;
  if (fingerprint !== null && !/^[0-9a-f]{64}$/.test(fingerprint)) problems.push(`caSha256 (--ca-sha256 or ${ENV.caSha256}) must be a SHA-256 fingerprint: 64 hex digits`);
  return fingerprint;
}

/** The machine token a token file holds; undefined, with the problem, when it cannot be read. */
function tokenIn(tokenFile: string, problems: string[]): string | undefined {
  try {
    return readFileSync(tokenFile, "utf8").trim();
  } catch (err) {
    problems.push(`tokenFile (--token-file or ${ENV.tokenFile}) cannot be read: ${(err as Error).message}`);
    return undefined;
  }
}

/** The relays' addresses (repeated, or separated by commas), each once; a problem when none, or one is not host:port. */
function serversOf(raw: unknown, problems: string[]): string[] {
  const servers = (Array.isArray(raw) ? raw : typeof raw === "string" ? [raw] : [])
    .flatMap((v) => (typeof v === "string" ? v.split(",") : [""]))
    .map((v) => v.trim())
    .filter((v, i, all) => v !== "" && all.indexOf(v) === i);
  if (servers.length === 0 || !servers.every((v) => /^[^\s:,]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$/.test(v))) {
    problems.push(`server (--server or ${ENV.server}) is required: the relay's gRPC address as host:port (repeat --server, or separate addresses with commas, for several relays)`);
  }
  return servers;
}

/** The hosts image URLs may name (a list, or separated by commas), lower case; a problem for each that is no host name. */
function mediaDomainsOf(raw: unknown, problems: string[]): readonly string[] {
  const domains = Object.freeze((Array.isArray(raw) ? raw.map(String) : String(raw ?? "").split(",")).map((d) => d.trim().toLowerCase()).filter(Boolean));
  for (const d of domains) if (!/^(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)*$/.test(d)) problems.push(`allowedMediaDomains (${ENV.allowedMediaDomains}): ${JSON.stringify(d)} is not a host name (such as images.example.com or *.example.com)`);
  return domains;
}

/** Why a link in the clear to these relays is refused, and what to pass instead. */
const plaintextRefusal = (to: string[]) =>
  `refusing a plaintext link to ${to.join(", ")}: anyone on the path could read prompts, answers and this machine's token. ` +
  "Pass --ca-sha256 from the install command (or --tls, or --ca-file), or --insecure to allow plaintext anyway";

/** Every setting's default, on a machine with `cores` logical CPUs. */
function defaultSettings(cores: number): Record<Setting, unknown> {
  return {
    server: undefined,
    machineId: undefined,
    token: undefined,
    tokenFile: null,
    caSha256: null,
    caFile: null,
    tls: false,
    insecure: false,
    dataDir: join(homedir(), ".makina", "agent"),
    threads: defaultThreads(cores),
    gpu: "auto",
    maxContextSize: 4096,
    parallelSequences: 2,
    streamIntervalMs: GGUF_FRAME_MS,
    reconnectMinMs: 250,
    reconnectMaxMs: 15_000,
    controlSocket: undefined,
    python: "python3",
    vllmPackage: VLLM_PACKAGE,
    mlxPackage: MLX_PACKAGE,
    hardwareIntervalMs: 60_000,
    loadIntervalMs: 5000,
    healthIntervalMs: 5000,
    healthTimeoutMs: 10_000,
    maxLoaded: 0,
    memoryBudget: "90%",
    loadTimeoutMs: 300_000,
    drainTimeoutMs: 30_000,
    hfEndpoint: DEFAULT_HF_ENDPOINT,
    hfToken: undefined,
    allowedMediaDomains: [],
    logLevel: "info",
    logFormat: "auto",
  };
}

/** Resolves flags > env > file > defaults into a frozen, validated config; reports every problem at once. */
export function resolveAgentConfig(sources: AgentConfigSources = {}, cores = availableParallelism()): AgentConfig {
  const problems: string[] = [];
  const defaults = defaultSettings(cores);
  const pick = (k: Setting): unknown => {
    const alias = ENV_ALIASES[k];
    for (const v of [sources.flags?.[k], sources.env?.[ENV[k]], alias && sources.env?.[alias], sources.file?.[k], formerFileValue(sources.file, k)]) if (v !== undefined && v !== "") return v;
    return defaults[k];
  };
  const required = (k: Setting, pattern: RegExp, what: string): string => {
    const v = pick(k);
    if (typeof v !== "string" || !pattern.test(v)) problems.push(`${k} (--${kebab(k)} or ${ENV[k]}) is required: ${what}`);
    return typeof v === "string" ? v : "";
  };
  const int = (k: Setting, min: number, max: number): number => {
    const v = Number(pick(k));
    if (!Number.isInteger(v) || v < min || v > max) problems.push(`${k} (${ENV[k]}) must be an integer from ${min} to ${max}`);
    return v;
  };
  const gpu = [false, "false", "off"].includes(pick("gpu") as string | boolean) ? false : "auto";
  const logLevel = String(pick("logLevel"));
  if (!["debug", "info", "warn", "error"].includes(logLevel)) problems.push("logLevel must be debug, info, warn or error");
  const logFormat = String(pick("logFormat"));
  if (!["auto", "json", "text"].includes(logFormat)) problems.push("logFormat must be auto, json or text");
  const dataDir = resolve(String(pick("dataDir")));
  const socket = pick("controlSocket");
  const hfEndpoint = String(pick("hfEndpoint")).replace(/\/+$/, "");
  const mediaDomains = mediaDomainsOf(pick("allowedMediaDomains"), problems);
  if (!/^https?:\/\/[^\s/]+(\/\S*)?$/.test(hfEndpoint) || !URL.canParse(hfEndpoint)) problems.push(`hfEndpoint (${ENV.hfEndpoint} or HF_ENDPOINT) must be an http(s) URL such as https://huggingface.co`);
  const bool = (k: Setting): boolean => {
    const v = pick(k);
    return v === true || v === "true" || v === "1";
  };
  const optionalPath = (k: Setting): string | null => {
    const v = pick(k);
    return typeof v === "string" ? resolve(v) : null;
  };
  const requirement = (k: Setting, name: string): string => {
    const v = String(pick(k));
    if (!isRequirement(v, name)) problems.push(`${k} (${ENV[k]}) must be a pip requirement for ${name}, such as ${name}==1.2.3`);
    return v;
  };
  const tokenFile = optionalPath("tokenFile");
  const fileToken = tokenFile && pick("token") === undefined ? tokenIn(tokenFile, problems) : undefined;
  const caSha256 = fingerprintOf(pick("caSha256"), problems);
  const caFile = optionalPath("caFile");
  const hfToken = pick("hfToken");
  if (hfToken !== undefined && (typeof hfToken !== "string" || !/^\S+$/.test(hfToken))) problems.push(`hfToken (${ENV.hfToken} or HF_TOKEN) must be a token without spaces`);
  const servers = serversOf(pick("server"), problems);
  const config: AgentConfig = {
    server: servers.join(","),
    servers,
    machineId: required("machineId", /^mach_[A-Za-z0-9]+$/, "a machine ID such as mach_…"),
    token: fileToken ?? required("token", /^mk_mach_[A-Za-z0-9]+$/, "a machine token such as mk_mach_… (or --token-file)"),
    tokenFile,
    caSha256,
    caFile,
    tls: bool("tls"),
    insecure: bool("insecure"),
    dataDir,
    threads: int("threads", 1, 1024),
    gpu,
    maxContextSize: int("maxContextSize", 64, 1 << 20),
    parallelSequences: int("parallelSequences", 1, 64),
    streamIntervalMs: int("streamIntervalMs", 0, 60_000),
    reconnectMinMs: int("reconnectMinMs", 10, 600_000),
    reconnectMaxMs: int("reconnectMaxMs", 10, 3_600_000),
    python: String(pick("python")),
    vllmPackage: requirement("vllmPackage", "vllm"),
    mlxPackage: requirement("mlxPackage", "mlx-lm"),
    controlSocket: resolve(typeof socket === "string" ? socket : join(dataDir, "agent.sock")),
    hardwareIntervalMs: int("hardwareIntervalMs", 1000, 86_400_000),
    loadIntervalMs: int("loadIntervalMs", 1000, 3_600_000),
    healthIntervalMs: int("healthIntervalMs", 50, 3_600_000),
    healthTimeoutMs: int("healthTimeoutMs", 50, 600_000),
    maxLoaded: int("maxLoaded", 0, 1024),
    memoryBudget: budgetOf(pick("memoryBudget"), problems),
    loadTimeoutMs: int("loadTimeoutMs", 1000, 3_600_000),
    drainTimeoutMs: int("drainTimeoutMs", 0, 3_600_000),
    hfEndpoint,
    hfToken: typeof hfToken === "string" ? hfToken : undefined,
    allowedMediaDomains: mediaDomains,
    runtimeEnv: Object.freeze(withoutSecrets(sources.env ?? {})),
    logLevel: logLevel as AgentConfig["logLevel"],
    logFormat: logFormat as AgentConfig["logFormat"],
  };
  if (config.reconnectMaxMs < config.reconnectMinMs) problems.push("reconnectMaxMs must not be below reconnectMinMs");
  if (fileToken !== undefined && !/^mk_mach_[A-Za-z0-9]+$/.test(fileToken)) problems.push(`tokenFile (${tokenFile}) must hold a machine token such as mk_mach_…`);
  const plaintextTo = config.servers.filter((v) => !isLoopback(v));
  if (plaintextTo.length > 0 && !linkUsesTls(config) && !config.insecure) problems.push(plaintextRefusal(plaintextTo));
  if (problems.length) throw new AgentConfigError(problems);
  return Object.freeze(config);
}

/** Whether the link is TLS (any of `caSha256`, `caFile`, `tls`). */
export function linkUsesTls(config: Pick<AgentConfig, "caSha256" | "caFile" | "tls">): boolean {
  return config.caSha256 !== null || config.caFile !== null || config.tls;
}

/** Whether `host:port` names this machine itself. */
export function isLoopback(server: string): boolean {
  const host = server.replace(/:\d+$/, "").replace(/^\[|\]$/g, "").toLowerCase();
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

function kebab(s: string): string {
  return s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/** `--memory-budget`, read: `N%` of the model memory, or bytes (`12GiB`, `512MiB`, `12884901888`). */
function budgetOf(value: unknown, problems: string[]): MemoryBudget {
  const budget = parseMemoryBudget(String(value));
  if (!budget) problems.push(`memoryBudget (--memory-budget or ${ENV.memoryBudget}) must be a share such as 90% or a size such as 12GiB or 512MiB, not ${JSON.stringify(String(value))}`);
  return budget ?? { percent: 90 };
}
