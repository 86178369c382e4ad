// The link's messages as both sides' code sees them. The wire types generated from agent_link.proto stay at
// the edge: a codec on each side (agent/link/agent-link-codec.ts, relay/link/relay-link-codec.ts) turns
// them into these, and an in-process link (relay and agent in one process, as `makina up` runs them)
// passes these as they are, with nothing encoded. Fields mean what agent_link.proto documents.
import type { ChatInput, EmbeddingVector, RerankScore } from "./chat-input.js";

export * from "./chat-input.js";

/** Tokens a request used. */
export interface Usage {
  promptTokens: number;
  completionTokens: number;
  /** Of the prompt's tokens, those the runtime did not evaluate again (a context sequence held them); absent: none. */
  cachedTokens?: number;
}

/** Why a token stream ended: `tool_calls` when the answer calls tools, `canceled` after the relay canceled the request. */
export type FinishReason = "stop" | "length" | "tool_calls" | "canceled";

/**
 * A piece of a tool call as it is generated: the first piece of each call (by `index`) carries its `id` and
 * `name`, later ones have them empty; the `arguments` of all its pieces, joined, are the call's JSON arguments.
 */
export interface ToolCallDelta {
  index: number;
  id: string;
  name: string;
  arguments: string;
}

/**
 * The one vocabulary of a token stream, from the runtime over the link to the HTTP route: text and tool-call
 * pieces as they are produced, then one `end` with the usage of the whole request.
 */
export type TokenEvent =
  | { type: "text"; text: string }
  | ({ type: "toolCall" } & ToolCallDelta)
  | ({ type: "embedding" } & EmbeddingVector)
  | ({ type: "score" } & RerankScore)
  | { type: "end"; finishReason: FinishReason; usage: Usage };

/** An error crossing the link: a code of `proto/errors` and a message fit for the API client. */
export interface ErrorReport {
  code: string;
  message: string;
  /** When the client may retry, in milliseconds; 0 when not said. */
  retryAfterMs: number;
  /** The request parameter at fault; empty when none. */
  param: string;
}

/** One graphics adapter. */
export interface Gpu {
  vendor: string;
  model: string;
  vramBytes: number;
  driverVersion: string;
}

/** One mounted file system. */
export interface Disk {
  mount: string;
  sizeBytes: number;
  freeBytes: number;
}

/** The hardware of a machine. */
export interface HardwareReport {
  platform: string;
  os: string;
  arch: string;
  cpuModel: string;
  cpuPhysicalCores: number;
  cpuLogicalCores: number;
  memoryBytes: number;
  gpus: Gpu[];
  disks: Disk[];
  accelerators: string[];
}

/** A stack's runtime on a machine. */
export interface HostedRuntime {
  stackId: string;
  modelId: string;
  runtime: string;
  version: string;
  state: string;
  endpoint: string;
  error: string;
  /** `always` or `on_demand`. */
  residency: string;
  /** The memory it counts against the machine's budget when loaded (what a loaded GGUF model says it holds, else an estimate), bytes; 0: unknown. */
  memoryBytes: number;
  /** Whether its model is loaded (or loading) now. */
  loaded: boolean;
}

/** A machine's limits on loaded models and what its runtimes count against them (0: no limit). */
export interface MachineMemory {
  budgetBytes: number;
  usedBytes: number;
  maxLoaded: number;
  loaded: number;
}

/** A model file on a machine's disk. */
export interface ModelOnDisk {
  name: string;
  format: string;
  sizeBytes: number;
  path: string;
  sha256: string;
  stackIds: string[];
}

/** What a machine hosts. */
export interface Inventory {
  runtimes: HostedRuntime[];
  models: ModelOnDisk[];
  /** Absent from agents that predate memory budgets. */
  memory: MachineMemory | undefined;
}

/** What one stack's runtime has served since the agent started (totals restart at 0 with the agent). */
export interface StackMetrics {
  stackId: string;
  /** Requests finished: answered, failed or canceled. */
  requests: number;
  /** Requests that ended with an error. */
  failed: number;
  promptTokens: number;
  completionTokens: number;
  /** Requests being served now, and those of them waiting for the relay's credit (a slow client). */
  inFlight: number;
  waitingForCredit: number;
}

/** One GPU's load at a sample. */
export interface GpuLoad {
  /** Its index in the platform tool's list. */
  index: number;
  name: string;
  /** Busy percent over the tool's last period; -1 when the tool does not say. */
  utilizationPercent: number;
  memoryUsedBytes: number;
  /** 0 when unknown (memory shared with the system). */
  memoryTotalBytes: number;
}

/** How hard a machine works at one sample. */
export interface MachineLoad {
  /** The agent's clock at the sample, Unix ms. */
  sampledAtMs: number;
  /** CPU busy since the previous sample, percent of all logical CPUs. */
  cpuPercent: number;
  memoryUsedBytes: number;
  memoryTotalBytes: number;
  gpus: GpuLoad[];
}

/** One step of a deployment, or (`checkModel`, with no stack) a look at a model file before a stack names it. */
export type DeployStep =
  /** Not a deployment step: an on-demand stack's model loaded (`load`) or unloaded now, as an admin asked. */
  | { kind: "loadModel"; load: boolean }
  | { kind: "installRuntime"; runtime: string }
  | { kind: "pullModel"; ref: string; sha256: string; runtime: string }
  | {
      kind: "configureEndpoint";
      runtime: string;
      modelRef: string;
      modelId: string;
      harness: string;
      harnessOptionsJson: string;
      orchestrator: string;
      orchestratorOptionsJson: string;
      /** Tokens of context per request the stack asks for; 0: the machine's default. */
      maxContext: number;
      /** `on_demand`: loaded by the first request and unloaded when idle; `always` or "": loaded now, kept. */
      residency: string;
      /** An on-demand stack's seconds without a request before it unloads; 0: only when the memory is needed. */
      idleUnloadS: number;
    }
  | { kind: "removeStack" }
  | { kind: "checkModel"; ref: string; runtime: string }
  /** Not a deployment step: the machine's log (no stack) or a stack's, the lines after `after`, at most `limit`. */
  | { kind: "readLog"; after: number; limit: number };

/** One line of a machine's log, secrets redacted; `level` `output` is a line a runtime's process wrote. */
export interface LogLine {
  seq: number;
  timeMs: number;
  level: string;
  text: string;
}

/** Progress of a running step. */
export interface StepProgress {
  stage: string;
  doneBytes: number;
  totalBytes: number;
  bytesPerSecond: number;
  etaSeconds: number;
}

/** What a finished step produced (zeros and empty strings where it produced nothing). */
export interface StepResult {
  modelPath: string;
  modelSha256: string;
  modelSizeBytes: number;
  contextSize: number;
  /** `checkModel` of a GGUF file: KV-cache bytes per token, and the trained context (0: unknown). */
  kvBytesPerToken: number;
  trainContextSize: number;
  /** `checkModel` of a GGUF file: an embedding model, which answers embeddings and no chat. */
  embeddingModel: boolean;
  /** `checkModel` and `configureEndpoint` of a GGUF file: a reranker, which answers rerank requests only. */
  rankingModel: boolean;
  /** `readLog`: the lines, oldest first, and whether older ones than the first were dropped. */
  logLines: LogLine[];
  logTruncated: boolean;
}

/** Lines of a machine's log, oldest first, and whether older ones than the first were dropped there. */
export type MachineLog = Pick<StepResult, "logLines" | "logTruncated">;

/** What a step that produced nothing returns. */
export const EMPTY_STEP_RESULT: Readonly<StepResult> = Object.freeze({ modelPath: "", modelSha256: "", modelSizeBytes: 0, contextSize: 0, kvBytesPerToken: 0, trainContextSize: 0, embeddingModel: false, rankingModel: false, logLines: [], logTruncated: false });

/**
 * Runtime states: `loading` (requests get 503, unless it is an on-demand stack's load, which they wait for),
 * `ready`, `failed` (final until redeployed); an on-demand stack's `unloaded` (the next request loads it) and
 * `unloading`.
 */
export type RuntimeState = "loading" | "ready" | "failed" | "unloaded" | "unloading";

/** Why an on-demand stack's model unloads: its idle time passed, or another needed the room. */
export type UnloadReason = "idle" | "memory" | "asked";

/** What comes with a runtime state: why it unloads, or how long the load that ended took and the context it loaded with. */
export interface StateDetail {
  reason?: UnloadReason;
  loadMs?: number;
  /** With `ready` ending an on-demand load: the context the loaded runtime serves, in tokens. */
  contextSize?: number;
}

/** Everything the relay sends an agent. */
export type RelayToAgent =
  | { type: "welcome"; machineId: string; heartbeatIntervalMs: number; protocolVersion: number }
  | { type: "infer"; requestId: string; stackId: string; input: ChatInput; credit: number }
  | { type: "cancel"; requestId: string; reason: string }
  | { type: "credit"; requestId: string; credits: number }
  | { type: "command"; commandId: string; stackId: string; step: DeployStep }
  | { type: "cancelCommand"; commandId: string; reason: string };

/** Everything an agent sends the relay. A request's `text` and `end` are {@link TokenEvent}s with its id. */
export type AgentToRelay =
  | { type: "hello"; protocolVersion: number; agentVersion: string; hardware: HardwareReport }
  | { type: "heartbeat"; sentAtMs: number }
  | { type: "text"; requestId: string; text: string }
  | ({ type: "toolCall"; requestId: string } & ToolCallDelta)
  | ({ type: "embedding"; requestId: string } & EmbeddingVector)
  | ({ type: "score"; requestId: string } & RerankScore)
  | { type: "end"; requestId: string; finishReason: FinishReason; usage: Usage }
  | { type: "failed"; requestId: string; error: ErrorReport; usage: Usage }
  | { type: "progress"; commandId: string; progress: StepProgress }
  | { type: "result"; commandId: string; result: StepResult }
  | { type: "stepFailed"; commandId: string; error: ErrorReport }
  | { type: "hardware"; hardware: HardwareReport }
  | ({ type: "runtimeState"; stackId: string; state: RuntimeState; error: string } & StateDetail)
  | { type: "inventory"; inventory: Inventory }
  | { type: "metrics"; stacks: StackMetrics[] }
  | { type: "load"; load: MachineLoad };

/** What proves a machine's identity when it opens a link. */
export interface LinkCredentials {
  machineId: string;
  token: string;
}

/** Why a link was refused: the machine's credentials, or its hello (protocol version, first message). */
export type LinkRefusal = "credentials" | "protocol";

/**
 * Where one side's messages go: the other side of a link, whatever carries it (gRPC across machines, a
 * direct call in one process). `close` tells that side the link is over.
 */
export interface LinkEnd<M> {
  send(message: M): void;
  /** True while messages wait to leave because the other side does not read them fast enough (absent: never). */
  congested?(): boolean;
  /** The link is over; `refused` when it never opened because the relay refused it. Idempotent. */
  close(reason: string, refused?: LinkRefusal): void;
  /**
   * The agent's end only: the relay took the call (its headers came), before it checked the machine and
   * welcomed it. A relay that got this far lives; under load its welcome may take longer.
   */
  reached?(): void;
}

/** The relay's side of opening a link: given a machine's credentials and its end, returns the relay's end. */
export type LinkAcceptor = (credentials: LinkCredentials, agent: LinkEnd<RelayToAgent>) => LinkEnd<AgentToRelay>;

/** The agent's side of opening a link: given its end, returns the relay's end. */
export type LinkDialer = (agent: LinkEnd<RelayToAgent>) => LinkEnd<AgentToRelay>;
