/** The admin API's contract as the web application reads it (snake_case JSON). */

export interface Org {
  id: string;
  name: string;
  slug: string;
  /** Limits for keys that set none of their own; null: none. */
  default_key_rpm?: number | null;
  default_key_tpm?: number | null;
}

export interface SessionInfo {
  user: { id: string; login: string; role: "admin" | "member" };
  org: Org;
  csrf_token: string;
}

export interface Gpu {
  vendor: string;
  model: string;
  vram_bytes: number;
  driver_version: string;
}

export interface Hardware {
  platform: string;
  os: string;
  arch: string;
  cpu_model: string;
  cpu_physical_cores: number;
  cpu_logical_cores: number;
  memory_bytes: number;
  gpus: Gpu[];
  disks: { mount: string; size_bytes: number; free_bytes: number }[];
  accelerators: string[];
}

export interface MachineInventory {
  runtimes: { stack_id: string; model_id: string; runtime: string; version: string; state: string; endpoint: string; error: string }[];
  models: { name: string; format: string; size_bytes: number; path: string; sha256: string; stack_ids: string[] }[];
}

export interface Machine {
  id: string;
  org_id: string;
  name: string;
  state: "pending" | "online" | "offline";
  hardware: Hardware | null;
  agent_version: string | null;
  last_seen_at: number | null;
  created_at: number;
  /** Runtimes and models on disk as the machine last reported them; null before its first report. */
  inventory: MachineInventory | null;
  /** When it was revoked; null while it may connect. */
  revoked_at: number | null;
}

export interface NewMachine extends Machine {
  token: string;
  install_command: string;
  /** The address agents dial (`host:port`). */
  server: string;
  /** SHA-256 of the relay's own link CA, which the agent pins; null when the relay has another certificate or no TLS. */
  ca_sha256: string | null;
}

export interface Check {
  level: "ok" | "warn" | "fail";
  message: string;
}

export interface DeploymentStep {
  seq: number;
  kind: string;
  state: "pending" | "running" | "succeeded" | "failed";
  detail: Record<string, unknown> | null;
  error: string | null;
  started_at: number | null;
  finished_at: number | null;
}

export interface Deployment {
  id: string;
  state: "running" | "succeeded" | "failed";
  error: string | null;
  started_at: number;
  finished_at: number | null;
  steps: DeploymentStep[];
}

export type RuntimeKind = "gguf" | "vllm" | "mlx" | "openai";

export interface Stack {
  id: string;
  org_id: string;
  name: string;
  machine_id: string;
  runtime: RuntimeKind;
  model_ref: string;
  /** The SHA-256 the model file is pinned to, or null. */
  model_sha256: string | null;
  /** An http(s):// model with no SHA-256 pinned: whatever the server sends is served. */
  model_unverified: boolean;
  model_id: string;
  harness: string | null;
  /** The harness's options, e.g. the system prompt. */
  harness_options: Record<string, string | number | boolean>;
  orchestrator: string | null;
  /** The orchestrator's options, e.g. its rounds or samples. */
  orchestrator_options: Record<string, string | number | boolean>;
  has_endpoint: boolean;
  state: "draft" | "deploying" | "deployed" | "failed" | "undeploying";
  state_error: string | null;
  context_size: number | null;
  runtime_state: string | null;
  runtime_error: string | null;
  deployed_at: number | null;
  created_at: number;
  compatibility: { ok: boolean | null; checks: Check[] };
  deployment: Deployment | null;
}

export interface ApiKey {
  id: string;
  name: string | null;
  prefix: string;
  stack_ids: string[] | null;
  machine_ids: string[] | null;
  rpm: number | null;
  tpm: number | null;
  state: "active" | "revoked";
  created_at: number;
  revoked_at: number | null;
  last_used_at: number | null;
  created_by: string | null;
  key?: string;
}

export interface User {
  id: string;
  login: string;
  role: "admin" | "member";
  created_at: number;
}

export interface List<T> {
  data: T[];
}

/** What the relay's event stream announces; a page reloads what it shows. */
export type EventType = "machine" | "stack" | "key";
