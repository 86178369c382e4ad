import { availableParallelism, homedir } from "node:os";
import { join, resolve } from "node:path";
import { DEFAULT_HF_ENDPOINT } from "./models/model-ref.js";

/** The agent's resolved, validated configuration. */
export interface AgentConfig {
  /** Relay gRPC address, `host:port`. */
  readonly server: string;
  /** This machine's ID (`mach_…`). */
  readonly machineId: string;
  /** This machine's token (`mk_mach_…`); never logged. */
  readonly token: string;
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
  /** Reconnect backoff bounds, ms. @default 250 and 15000 */
  readonly reconnectMinMs: number;
  readonly reconnectMaxMs: number;
  /** Python used to create the virtual environments of vLLM and MLX. @default "python3" */
  readonly python: string;
  /** The local control socket (`doctor`, `info`, …). @default "<dataDir>/agent.sock" */
  readonly controlSocket: string;
  /** How often hardware is detected again, ms (changes are sent to the relay). @default 60000 */
  readonly hardwareIntervalMs: number;
  /** Where `hf:` model references resolve: Hugging Face or a mirror. @default "https://huggingface.co" */
  readonly hfEndpoint: string;
  /** A Hugging Face token for gated and private models, sent to `hfEndpoint` only; never logged. */
  readonly hfToken: string | undefined;
  readonly logLevel: "debug" | "info" | "warn" | "error";
}

/** Raw inputs: command-line flags, environment (`MAKINA_AGENT_*`), config file; in that precedence. */
export interface AgentConfigSources {
  flags?: Partial<Record<keyof AgentConfig, unknown>>;
  env?: Record<string, string | undefined>;
  file?: Partial<Record<keyof AgentConfig, unknown>>;
}

const ENV: Record<keyof AgentConfig, string> = {
  server: "MAKINA_AGENT_SERVER",
  machineId: "MAKINA_AGENT_MACHINE_ID",
  token: "MAKINA_AGENT_TOKEN",
  dataDir: "MAKINA_AGENT_DATA_DIR",
  threads: "MAKINA_AGENT_THREADS",
  gpu: "MAKINA_AGENT_GPU",
  maxContextSize: "MAKINA_AGENT_MAX_CONTEXT",
  parallelSequences: "MAKINA_AGENT_PARALLEL",
  reconnectMinMs: "MAKINA_AGENT_RECONNECT_MIN_MS",
  reconnectMaxMs: "MAKINA_AGENT_RECONNECT_MAX_MS",
  controlSocket: "MAKINA_AGENT_SOCKET",
  python: "MAKINA_AGENT_PYTHON",
  hardwareIntervalMs: "MAKINA_AGENT_HARDWARE_INTERVAL_MS",
  hfEndpoint: "MAKINA_AGENT_HF_ENDPOINT",
  hfToken: "MAKINA_AGENT_HF_TOKEN",
  logLevel: "MAKINA_LOG_LEVEL",
};

/** The variables Hugging Face's own tools read, honoured after Makina's. */
const ENV_ALIASES: Partial<Record<keyof AgentConfig, string>> = { hfEndpoint: "HF_ENDPOINT", hfToken: "HF_TOKEN" };

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

/** Resolves flags > env > file > defaults into a frozen, validated config; reports every problem at once. */
export function resolveAgentConfig(sources: AgentConfigSources = {}, cores = availableParallelism()): AgentConfig {
  const problems: string[] = [];
  const defaults: Record<keyof AgentConfig, unknown> = {
    server: undefined,
    machineId: undefined,
    token: undefined,
    dataDir: join(homedir(), ".makina", "agent"),
    threads: defaultThreads(cores),
    gpu: "auto",
    maxContextSize: 4096,
    parallelSequences: 2,
    reconnectMinMs: 250,
    reconnectMaxMs: 15_000,
    controlSocket: undefined,
    python: "python3",
    hardwareIntervalMs: 60_000,
    hfEndpoint: DEFAULT_HF_ENDPOINT,
    hfToken: undefined,
    logLevel: "info",
  };
  const pick = (k: keyof AgentConfig): unknown => {
    const alias = ENV_ALIASES[k];
    for (const v of [sources.flags?.[k], sources.env?.[ENV[k]], alias && sources.env?.[alias], sources.file?.[k]]) if (v !== undefined && v !== "") return v;
    return defaults[k];
  };
  const required = (k: keyof AgentConfig, pattern: RegExp, what: string): string => {
    const v = pick(k);
    if (typeof v !== "string" || !pattern.test(v)) problems.push(`${k} (--${kebab(k)} or ${ENV[k]}) is required: ${what}`);
    return typeof v === "string" ? v : "";
  };
  const int = (k: keyof AgentConfig, min: number, max: number): number => {
    const v = Number(pick(k));
    if (!Number.isInteger(v) || v < min || v > max) problems.push(`${k} (${ENV[k]}) must be an integer from ${min} to ${max}`);
    return v;
  };
  const gpuRaw = pick("gpu");
  const gpu = gpuRaw === false || gpuRaw === "false" || gpuRaw === "off" ? false : "auto";
  const logLevel = String(pick("logLevel"));
  if (!["debug", "info", "warn", "error"].includes(logLevel)) problems.push("logLevel must be debug, info, warn or error");
  const dataDir = resolve(String(pick("dataDir")));
  const socket = pick("controlSocket");
  const hfEndpoint = String(pick("hfEndpoint")).replace(/\/+$/, "");
  if (!/^https?:\/\/[^\s/]+(\/\S*)?$/.test(hfEndpoint) || !URL.canParse(hfEndpoint)) problems.push(`hfEndpoint (${ENV.hfEndpoint} or HF_ENDPOINT) must be an http(s) URL such as https://huggingface.co`);
  const hfToken = pick("hfToken");
  if (hfToken !== undefined && (typeof hfToken !== "string" || !/^\S+$/.test(hfToken))) problems.push(`hfToken (${ENV.hfToken} or HF_TOKEN) must be a token without spaces`);
  const config: AgentConfig = {
    server: required("server", /^[^\s:]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$/, "the relay's gRPC address as host:port"),
    machineId: required("machineId", /^mach_[A-Za-z0-9]+$/, "a machine ID such as mach_…"),
    token: required("token", /^mk_mach_[A-Za-z0-9]+$/, "a machine token such as mk_mach_…"),
    dataDir,
    threads: int("threads", 1, 1024),
    gpu,
    maxContextSize: int("maxContextSize", 64, 1 << 20),
    parallelSequences: int("parallelSequences", 1, 64),
    reconnectMinMs: int("reconnectMinMs", 10, 600_000),
    reconnectMaxMs: int("reconnectMaxMs", 10, 3_600_000),
    python: String(pick("python")),
    controlSocket: resolve(typeof socket === "string" ? socket : join(dataDir, "agent.sock")),
    hardwareIntervalMs: int("hardwareIntervalMs", 1000, 86_400_000),
    hfEndpoint,
    hfToken: typeof hfToken === "string" ? hfToken : undefined,
    logLevel: logLevel as AgentConfig["logLevel"],
  };
  if (config.reconnectMaxMs < config.reconnectMinMs) problems.push("reconnectMaxMs must not be below reconnectMinMs");
  if (problems.length) throw new AgentConfigError(problems);
  return Object.freeze(config);
}

function kebab(s: string): string {
  return s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}
