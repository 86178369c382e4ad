import type { HardwareReport } from "../../proto/index.js";
import type { CachedModel } from "../models/model-store.js";
import type { HostedStack } from "../stacks/stack-host.js";

/** Everything the local control socket reports; what `doctor`, `info`, `runtime list` and `model list` print. */
export interface AgentStatus {
  agentVersion: string;
  pid: number;
  startedAt: number;
  machineId: string;
  server: string;
  dataDir: string;
  link: {
    state: string;
    lastError: string | null;
    credentialsRejected: boolean;
    onlineSince: number | null;
  };
  hardware: HardwareReport;
  /** Hardware probes that failed (the agent runs on regardless). */
  hardwareProblems: string[];
  /** GPU backends llama.cpp can use here: `cuda`, `vulkan`, `metal`; empty for CPU only. */
  accelerators: string[];
  disk: { path: string; freeBytes: number; sizeBytes: number } | null;
  runtimes: (HostedStack & { version: string })[];
  /** The limits loaded runtimes keep within, and what they count now (0: no limit). */
  memory: { budgetBytes: number; usedBytes: number; maxLoaded: number; loaded: number; loadedStacks: string[] };
  models: CachedModel[];
}
