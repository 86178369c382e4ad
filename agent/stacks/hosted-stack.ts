import type { RuntimeState } from "../../proto/index.js";

/** A stack's runtime on this machine. */
export interface HostedStack {
  stackId: string;
  modelId: string;
  runtime: string;
  state: RuntimeState;
  /** Where requests are served: `in-process` for GGUF, a local URL for server runtimes. */
  endpoint: string;
  modelRef: string;
  modelPath: string | null;
  modelSha256: string | null;
  modelSizeBytes: number | null;
  contextSize: number | null;
  /** The context the stack asked for; null: the machine's default. */
  maxContext: number | null;
  /** `on_demand`: loaded by the first request, unloaded when idle or for room; `always`: loaded until removed. */
  residency: "always" | "on_demand";
  error: string | null;
  since: number;
  /** The runtime's process, when the agent runs one. */
  pid: number | null;
  /** The memory it counts against the machine's budget when loaded (what it says it holds, else an estimate), bytes; 0: not known. */
  memoryBytes: number;
}
