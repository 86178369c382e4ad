import type { HardwareReport, Inventory } from "../../proto/index.js";
import type { Db } from "./open-database.js";
import { newId } from "../ids/index.js";

/** Machine states: `pending` (created, never connected) → `online` ⇄ `offline`. */
export type MachineState = "pending" | "online" | "offline";

/** The hardware a machine reported in its last hello or hardware update, as stored. */
export type HardwareSummary = HardwareReport;

/** What a machine hosts, as it last reported it (cut to size). */
export type MachineInventory = Inventory;

/** A worker machine. */
export interface Machine {
  id: string;
  orgId: string;
  name: string;
  state: MachineState;
  hardware: HardwareSummary | null;
  agentVersion: string | null;
  lastSeenAt: number | null;
  createdAt: number;
  /** Runtimes and models on disk as the machine last reported them; null before its first report. */
  inventory: MachineInventory | null;
  /** When the machine was revoked; null while it may connect. */
  revokedAt: number | null;
}

interface Row {
  id: string;
  org_id: string;
  name: string;
  token_hash: string;
  state: MachineState;
  hardware_json: string | null;
  agent_version: string | null;
  last_seen_at: number | null;
  created_at: number;
  inventory_json: string | null;
  revoked_at: number | null;
}

const toMachine = (r: Row): Machine => ({
  id: r.id,
  orgId: r.org_id,
  name: r.name,
  state: r.state,
  hardware: r.hardware_json ? (JSON.parse(r.hardware_json) as HardwareSummary) : null,
  agentVersion: r.agent_version,
  lastSeenAt: r.last_seen_at,
  createdAt: r.created_at,
  inventory: r.inventory_json ? (JSON.parse(r.inventory_json) as MachineInventory) : null,
  revokedAt: r.revoked_at,
});

/** Machines in SQLite; their tokens are stored only as hashes. */
export class MachineStore {
  constructor(private readonly db: Db) {}

  create(input: { orgId: string; name: string; tokenHash: string }, now = Date.now()): Machine {
    const id = newId("mach");
    this.db
      .prepare("INSERT INTO machines (id, org_id, name, token_hash, created_at) VALUES (?, ?, ?, ?, ?)")
      .run(id, input.orgId, input.name, input.tokenHash, now);
    return this.get(id)!;
  }

  get(id: string): Machine | undefined {
    const row = this.db.prepare("SELECT * FROM machines WHERE id = ?").get(id) as Row | undefined;
    return row && toMachine(row);
  }

  /** The stored token hash, for authenticating a link. */
  tokenHash(id: string): string | undefined {
    return (this.db.prepare("SELECT token_hash FROM machines WHERE id = ?").get(id) as { token_hash: string } | undefined)?.token_hash;
  }

  listByOrg(orgId: string): Machine[] {
    return (this.db.prepare("SELECT * FROM machines WHERE org_id = ? ORDER BY created_at, id").all(orgId) as Row[]).map(toMachine);
  }

  markOnline(id: string, hello: { hardware: HardwareSummary; agentVersion: string }, now = Date.now()): void {
    this.db
      .prepare("UPDATE machines SET state = 'online', hardware_json = ?, agent_version = ?, last_seen_at = ? WHERE id = ?")
      .run(JSON.stringify(hello.hardware), hello.agentVersion, now, id);
  }

  updateHardware(id: string, hardware: HardwareSummary): void {
    this.db.prepare("UPDATE machines SET hardware_json = ? WHERE id = ?").run(JSON.stringify(hardware), id);
  }

  /** Replaces the machine's token (stored as a hash only). */
  setTokenHash(id: string, tokenHash: string): void {
    this.db.prepare("UPDATE machines SET token_hash = ? WHERE id = ?").run(tokenHash, id);
  }

  /** Revokes a machine for good: its token hash is replaced by one no token matches. */
  revoke(id: string, unmatchableHash: string, now = Date.now()): void {
    this.db.prepare("UPDATE machines SET revoked_at = COALESCE(revoked_at, ?), token_hash = ? WHERE id = ?").run(now, unmatchableHash, id);
  }

  setInventory(id: string, inventory: MachineInventory): void {
    this.db.prepare("UPDATE machines SET inventory_json = ? WHERE id = ?").run(JSON.stringify(inventory), id);
  }

  markOffline(id: string, now = Date.now()): void {
    this.db.prepare("UPDATE machines SET state = 'offline', last_seen_at = ? WHERE id = ? AND state = 'online'").run(now, id);
  }

  /** At relay start no link exists yet, so every machine that was online is offline. */
  markAllOffline(): void {
    this.db.prepare("UPDATE machines SET state = 'offline' WHERE state = 'online'").run();
  }
}
