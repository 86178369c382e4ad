import { z } from "zod";
import { answer, route } from "./route.js";
import { must, orgRef } from "./fields.js";
import type { StackState } from "./stacks.js";

/** One GPU's load, as its machine's agent last sampled it (`nvidia-smi`, or the platform's equivalent). */
export interface GpuLoad {
  /** Its index on the machine. */
  index: number;
  name: string;
  /** Busy percent over the tool's last period; null when the tool does not say. */
  utilization_percent: number | null;
  memory_used_bytes: number;
  /** 0 when the GPU shares the system's memory (Apple silicon). */
  memory_total_bytes: number;
}

/** An online machine's load, as its agent last sampled it (every few seconds). */
export interface MachineLoad {
  machine_id: string;
  name: string;
  /** CPU busy, percent of all its logical CPUs. */
  cpu_percent: number;
  memory_used_bytes: number;
  memory_total_bytes: number;
  gpus: GpuLoad[];
  /** When the relay received it, Unix ms. */
  received_at: number;
  /** The memory its models may use (`--memory-budget`) and what each stack counts against it; null from an agent that predates budgets. */
  models: ModelMemory | null;
}

/** A machine's memory budget for models, as its agent keeps it: what loaded runtimes count, stack by stack. */
export interface ModelMemory {
  /** 0: no limit. */
  budget_bytes: number;
  used_bytes: number;
  /** Runtimes loaded at once at most (`--max-loaded`); 0: no limit. */
  max_loaded: number;
  /**
   * The organization's stacks on the machine: what each counts when loaded (a loaded GGUF model: what node-llama-cpp
   * says it holds; otherwise the compatibility estimate; 0 unknown), whether it is loaded, and its runtime's state.
   */
  stacks: { stack_id: string; name: string; bytes: number; loaded: boolean; residency: string; state: string }[];
}

/** One minute of requests. */
export interface MinutePoint {
  /** The minute's start, Unix ms. */
  start: number;
  requests: number;
  errors: number;
  completion_tokens: number;
}

/**
 * The gateway's requests as the request log has them: the last minute's rates, and the last hour's counts,
 * error rate, latency and runtime speed.
 */
export interface RequestFigures {
  /** Requests that ended in the last 60 seconds. */
  requests_per_minute: number;
  /** Tokens generated in the last 60 seconds, per second. */
  tokens_per_second: number;
  /** The last hour: requests, those that failed or were refused (status 400 and up, or a stream that failed). */
  requests: number;
  errors: number;
  /** errors / requests; null without requests. */
  error_rate: number | null;
  prompt_tokens: number;
  completion_tokens: number;
  /** Latency of the last hour's answered requests (nearest rank), ms; null without any. */
  p50_ms: number | null;
  p95_ms: number | null;
  /** How fast the runtimes generated once the first token had come (answered streamed requests): null without any. */
  decode_tokens_per_second: number | null;
  /** Each of the last 60 minutes, oldest first (the current one last, still counting). */
  minutes: MinutePoint[];
}

/** What an organization (or one machine, or one stack) is running and how hard, now. */
export interface Overview {
  object: "overview";
  org_id: string;
  /** When the figures were made, Unix ms. */
  at: number;
  /** What they cover: the organization, one machine, or one stack. */
  scope: { machine: string | null; stack: string | null };
  /** Machines by state (revoked ones apart). */
  machines: { total: number; online: number; offline: number; pending: number; revoked: number };
  /** Each online machine's latest load; a machine whose agent has not reported one is left out. */
  loads: MachineLoad[];
  /**
   * Stacks by state, and the deployed ones' runtimes by what their machine last reported (`ready`, `loading`,
   * `failed`, `unloaded`: an on-demand stack's model unloaded or unloading, which its next request loads; `unknown`
   * before a report), or `offline` when their machine is not online (they answer 503).
   */
  stacks: { total: number; by_state: Record<StackState, number>; runtimes: { ready: number; loading: number; failed: number; unloaded: number; unknown: number; offline: number } };
  requests: RequestFigures;
}

export const OVERVIEW_ROUTES = {
  /**
   * What an organization runs and how hard (anyone of it): machines by state and their live load (CPU, memory,
   * each GPU's utilization and memory), stacks by state, and the gateway's requests of the last minute and hour.
   * With `machine` or `stack`, the same figures for that machine or stack alone.
   */
  "GET /admin/v1/overview": route({
    query: z
      .strictObject({
        org: orgRef(),
        machine: z.string(must("a machine id")).optional(),
        stack: z.string(must("a stack id")).optional(),
      })
      .refine((q) => q.machine === undefined || q.stack === undefined, { error: "Give 'machine' or 'stack', not both.", path: ["stack"] }),
    response: answer<Overview>(),
  }),
} as const;
