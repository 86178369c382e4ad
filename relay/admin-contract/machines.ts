import { logQuery, type LogPage } from "./logs.js";
import { z } from "zod";
import { answer, route } from "./route.js";
import { nameText, orgRef } from "./fields.js";
import { listQuery, type Page } from "./list.js";

/** One graphics adapter of a machine. */
export interface Gpu {
  vendor: string;
  model: string;
  vram_bytes: number;
  driver_version: string;
}

/** A machine's hardware, as it reported it. */
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

/** What a machine hosts, as it last reported it. */
export interface MachineInventory {
  /**
   * Each stack's runtime: its state, `residency` (`always` or `on_demand`), the memory it counts against the
   * machine's budget when loaded (`memory_bytes`: a loaded GGUF model's what node-llama-cpp says it holds, otherwise
   * the compatibility estimate; 0: unknown) and whether it is `loaded`.
   */
  runtimes: { stack_id: string; model_id: string; runtime: string; version: string; state: string; endpoint: string; error: string; residency: string; memory_bytes: number; loaded: boolean }[];
  models: { name: string; format: string; size_bytes: number; path: string; sha256: string; stack_ids: string[] }[];
  /**
   * The machine's limits on loaded models (`--memory-budget`, `--max-loaded`; 0: no limit) and what its loaded
   * runtimes count against them now; null from an agent that predates them.
   */
  memory: { budget_bytes: number; used_bytes: number; max_loaded: number; loaded: number } | null;
}

/** Machine states: `pending` (created, never connected) → `online` ⇄ `offline`. */
export type MachineState = "pending" | "online" | "offline";

/** A worker machine. */
export interface Machine {
  id: string;
  org_id: string;
  name: string;
  state: MachineState;
  /** Null until it first connects. */
  hardware: Hardware | null;
  agent_version: string | null;
  last_seen_at: number | null;
  created_at: number;
  /** Runtimes and models on disk as the machine last reported them; null before its first report. */
  inventory: MachineInventory | null;
  /** When it was revoked; null while it may connect. */
  revoked_at: number | null;
}

/** What a deletion answers. */
export interface DeletedMachine {
  id: string;
  deleted: true;
}

/** A machine just added, or given a new token: what it takes to join it, shown this once. */
export interface MachineJoining extends Machine {
  token: string;
  /**
   * The one-line install command; it asks for `token` on the machine's terminal (or takes it from
   * MAKINA_MACHINE_TOKEN or --token-file). Null when the relay cannot offer one safely: `install_refused` says why.
   */
  install_command: string | null;
  /** Why there is no install command, and how to have one; null when there is one. */
  install_refused: string | null;
  /**
   * Why the install command works on this computer only (it names a loopback address), and exactly what to start
   * the relay with instead (`--public-address HOST`); null when it reaches beyond this computer.
   */
  reach_warning: string | null;
  /** The address agents dial (`host:port`). */
  server: string;
  /** SHA-256 of the relay's own link CA, which the agent pins; null when the relay has another certificate or no TLS. */
  ca_sha256: string | null;
}

/** What the machines' list sorts by. */
export const MACHINE_SORTS = ["name", "state", "created_at", "last_seen_at"] as const;

export const MACHINE_ROUTES = {
  /** The organization's machines, a page at a time: searched in names and ids; `revoked` is a state to filter by. */
  "GET /admin/v1/machines": route({ query: z.strictObject({ org: orgRef(), ...listQuery(MACHINE_SORTS, ["pending", "online", "offline", "revoked"]) }), response: answer<Page<Machine>>() }),
  "GET /admin/v1/machines/:id": route({ response: answer<Machine>() }),
  /** Registers a machine (admins); its token is in the answer only. */
  "POST /admin/v1/machines": route({ status: 201, body: z.strictObject({ org: orgRef(), name: nameText() }), response: answer<MachineJoining>() }),
  /** Revokes a machine (admins): its link drops at once, its token never works again. Final. */
  "POST /admin/v1/machines/:id/revoke": route({ response: answer<Machine>() }),
  /** The last lines of the machine's agent log (admins), read over its link: 503 `machine_offline` when it is not linked. */
  "GET /admin/v1/machines/:id/log": route({ query: logQuery(), response: answer<LogPage>() }),
  /** Gives a machine a new token (admins); the old one stops working and the link drops. */
  "POST /admin/v1/machines/:id/rotate-token": route({ response: answer<MachineJoining>() }),
  /** Renames a machine (admins); nothing else changes. */
  "PATCH /admin/v1/machines/:id": route({ body: z.strictObject({ name: nameText() }), response: answer<Machine>() }),
  /**
   * Deletes a machine (admins) that never joined, or that is revoked, and that no stack names: 409 `conflict`
   * otherwise, saying what to do first. Final.
   */
  "DELETE /admin/v1/machines/:id": route({ response: answer<DeletedMachine>() }),
} as const;
