import type { HardwareReport, Logger } from "../../proto/index.js";
import type { StepProgress } from "../../proto/index.js";
import type { ModelRuntime } from "./model-runtime.js";

import type { RuntimeKind } from "../../proto/index.js";

export type { RuntimeKind };

/** What a runtime needs of the machine. */
export interface RuntimeRequirements {
  /** Operating systems (`process.platform` values); absent = any. */
  platforms?: string[];
  /** CPU architectures; absent = any. */
  arch?: string[];
  /** At least one of these GPU backends must be usable; absent = none needed. */
  accelerators?: string[];
  /** Human description for errors, e.g. "Linux with an NVIDIA GPU (CUDA)". */
  description: string;
}

/** What install and start need from the agent. */
export interface RuntimeContext {
  /** Where runtimes keep their installs (`<dataDir>/runtimes`). */
  runtimesDir: string;
  /** The agent's private directory (mode 0700) for the model processes' sockets (`<dataDir>/run`); absent: a private temporary one. */
  runDir?: string;
  /** The Python used to create virtual environments. */
  python: string;
  /** The environment the runtime's processes start from (the agent's, without its secrets). */
  env?: Readonly<Record<string, string>>;
  /** What pip installs for the Python runtimes: pinned requirements. */
  packages?: { vllm: string; mlx: string };
  /** The hub `hf:` repositories resolve against, and its token: handed to a runtime only when it downloads one itself. */
  hub?: { endpoint: string; token?: string };
  log: Logger;
  /** Where each line the runtime's processes write goes (the stack's log an admin reads); absent: nowhere but the last lines kept for an error. */
  output?: (line: string) => void;
  signal?: AbortSignal;
  onProgress?: (p: StepProgress) => void;
  /** How a ready runtime's process is probed: a wedged one is taken out of service and restarted. */
  health?: { healthIntervalMs: number; healthTimeoutMs: number };
  /** The only hosts a runtime may fetch media from (vLLM's `--allowed-media-domains`); empty: none given. */
  allowedMediaDomains?: readonly string[];
  /** Reports state changes of a supervised runtime after it started (restarts, a wedged process, crash loop). */
  onState?: (state: "loading" | "ready" | "failed", error: string | null) => void;
}

/** The part of a {@link RuntimeContext} that is the same for every step: how runtimes are set up on this machine. */
export type RuntimeSetup = Pick<RuntimeContext, "runtimesDir" | "runDir" | "python" | "env" | "packages" | "hub" | "health" | "allowedMediaDomains">;

/** A model to serve: a local file, or a name the runtime resolves itself (vLLM's hub ids). */
export interface ModelToServe {
  modelId: string;
  ref: string;
  path: string | null;
  /** The most tokens of context per request the stack asks for; null: the machine's default (MAKINA_AGENT_MAX_CONTEXT). Runtimes that size their own ignore it. */
  maxContext?: number | null;
  /** Loaded by requests and unloaded when idle: a runtime that can sleep instead of stopping (vLLM) is started so it can. */
  onDemand?: boolean;
  /** The runtime this one replaces (a handover: it closes once this one is ready): what it holds of the machine (threads) is this one's to take. */
  replaces?: ModelRuntime;
}

/**
 * The one interface every runtime implements: install it, check its
 * requirements, and start a model (resolving once it is ready). Which request parameters a kind honours is
 * `RUNTIME_CAPABILITIES` in proto, which the relay reads to route requests and check stacks.
 */
export interface RuntimeAdapter {
  readonly kind: RuntimeKind;
  readonly requirements: RuntimeRequirements;
  /** Makes the runtime usable; idempotent. Resolves with its version. */
  install(ctx: RuntimeContext): Promise<{ version: string }>;
  /** Serves `model`; resolves once a readiness probe passes. */
  start(model: ModelToServe, ctx: RuntimeContext): Promise<ModelRuntime>;
}

/** What keeps a runtime off this machine, in words; empty when it can run. */
export function unmetRequirements(req: RuntimeRequirements, hardware: HardwareReport): string[] {
  const problems: string[] = [];
  if (req.platforms && !req.platforms.includes(hardware.platform)) problems.push(`needs ${req.description}, but this machine runs ${hardware.platform}/${hardware.arch}`);
  else if (req.arch && !req.arch.includes(hardware.arch)) problems.push(`needs ${req.description}, but this machine is ${hardware.arch}`);
  if (req.accelerators && !req.accelerators.some((a) => hardware.accelerators.includes(a))) {
    problems.push(`needs ${req.description}, but no ${req.accelerators.join("/")} backend is usable here${hardware.gpus.length ? " (is the GPU driver installed?)" : " (no GPU found)"}`);
  }
  return problems;
}
