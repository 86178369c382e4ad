import type { HardwareReport, Inventory, MachineMemory } from "../../proto/index.js";
import { sql } from "kysely";
import { databaseNowMs, type Db } from "./open-database.js";
import type { ChangeNotices } from "./change-notices.js";
import type { Row } from "./tables.js";
import { newId } from "../ids/index.js";
import { BatchLoader } from "./batch-loader.js";
import { BatchWriter } from "./batch-writer.js";

/** The writes of a machine's link, batched across machines (see {@link BatchWriter}). */
type LinkWrite =
  | { kind: "online"; key: string; hardware: string; agentVersion: string; now: number }
  | { kind: "offline"; key: string; now: number }
  | { kind: "hardware"; key: string; hardware: string }
  | { kind: "inventory"; key: string; inventory: string };

/** `CASE id WHEN … THEN … END`: each row of a batched update its own value (as a parameter, or inlined when a number). */
function byId<W extends { key: string }>(writes: W[], value: (w: W) => string | number) {
  const whens = writes.map((w) => {
    const v = value(w);
    return sql`WHEN ${w.key} THEN ${typeof v === "number" ? sql.lit(v) : v}`;
  });
  return sql<never>`CASE id ${sql.join(whens, sql` `)} END`;
}

/** Machine states: `pending` (created, never connected) → `online` ⇄ `offline`. */
export type MachineState = "pending" | "online" | "offline";

/** The hardware a machine reported in its last hello or hardware update, as stored. */
export type HardwareSummary = HardwareReport;

/** What a machine hosts, as it last reported it (cut to size); `memory` null from an agent that predates budgets. */
export type MachineInventory = Omit<Inventory, "memory"> & { memory: MachineMemory | null };

/** An inventory as stored, read back: what an older agent did not say is given its default. */
function storedInventory(json: string): MachineInventory {
  const inv = JSON.parse(json) as Partial<MachineInventory>;
  return {
    runtimes: (inv.runtimes ?? []).map((r) => ({ ...r, residency: r.residency || "always", memoryBytes: r.memoryBytes ?? 0, loaded: r.loaded ?? r.state === "ready" })),
    models: inv.models ?? [],
    memory: inv.memory ?? null,
  };
}

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

const toMachine = (r: Row<"machines">): Machine => ({
  id: r.id,
  orgId: r.org_id,
  name: r.name,
  state: r.state,
  hardware: r.hardware_json ? (JSON.parse(r.hardware_json) as HardwareSummary) : null,
  agentVersion: r.agent_version,
  lastSeenAt: r.last_seen_at,
  createdAt: r.created_at,
  inventory: r.inventory_json ? storedInventory(r.inventory_json) : null,
  revokedAt: r.revoked_at,
});

/**
 * Machines; their tokens are stored only as hashes. What a link reads and writes (its credentials, its online
 * state, hardware and inventory) is batched across machines: thousands relinking at once after a relay died
 * cost a few statements rather than several round trips each.
 */
export class MachineStore {
  private readonly forLink = new BatchLoader<string, { machine: Machine; tokenHash: string } | undefined>(async (ids) => {
    const rows = await this.db.selectFrom("machines").selectAll().where("id", "in", ids).execute();
    return new Map(rows.map((r) => [r.id, { machine: toMachine(r), tokenHash: r.token_hash }]));
  }, undefined);
  private readonly linkWrites = new BatchWriter<LinkWrite>((run) => this.writeRows(run));

  /** `relayId`: this relay's id, recorded on the machines it links. */
  constructor(
    private readonly db: Db,
    private readonly notices: ChangeNotices,
    private readonly relayId: string | null = null,
  ) {}

  async create(input: { orgId: string; name: string; tokenHash: string }, now = Date.now()): Promise<Machine> {
    const id = newId("mach");
    await this.db.insertInto("machines").values({ id, org_id: input.orgId, name: input.name, token_hash: input.tokenHash, created_at: now }).execute();
    return (await this.get(id))!;
  }

  async get(id: string): Promise<Machine | undefined> {
    const row = await this.db.selectFrom("machines").selectAll().where("id", "=", id).executeTakeFirst();
    return row && toMachine(row);
  }

  /** Resolves once the link writes asked for so far are written or failed. */
  drain(): Promise<void> {
    return this.linkWrites.drain();
  }

  /** A machine and its stored token hash, for authenticating a link (read with other links' in one query). */
  getForLink(id: string): Promise<{ machine: Machine; tokenHash: string } | undefined> {
    return this.forLink.load(id);
  }

  /** The stored token hash, for authenticating a link. */
  async tokenHash(id: string): Promise<string | undefined> {
    return (await this.db.selectFrom("machines").select("token_hash").where("id", "=", id).executeTakeFirst())?.token_hash;
  }

  async listByOrg(orgId: string): Promise<Machine[]> {
    return (await this.db.selectFrom("machines").selectAll().where("org_id", "=", orgId).orderBy("created_at").orderBy("id").execute()).map(toMachine);
  }

  markOnline(id: string, hello: { hardware: HardwareSummary; agentVersion: string }, now = Date.now()): Promise<void> {
    return this.linkWrites.write({ kind: "online", key: id, hardware: JSON.stringify(hello.hardware), agentVersion: hello.agentVersion, now });
  }

  updateHardware(id: string, hardware: HardwareSummary): Promise<void> {
    return this.linkWrites.write({ kind: "hardware", key: id, hardware: JSON.stringify(hardware) });
  }

  /** Gives a machine a new name (what people read; nothing routes on it). */
  async rename(id: string, name: string): Promise<void> {
    await this.db.updateTable("machines").set({ name }).where("id", "=", id).execute();
  }

  /**
   * Deletes a machine that no stack names (their rows would point at nothing). Returns false when a stack still
   * does, or the machine is gone already. The caller revokes it first, so no link holds or takes it meanwhile.
   */
  async delete(id: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom("machines")
      .where("id", "=", id)
      .where((eb) => eb.not(eb.exists(eb.selectFrom("stacks").select("stacks.id").where("stacks.machine_id", "=", id))))
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Replaces the machine's token (stored as a hash only). */
  async setTokenHash(id: string, tokenHash: string): Promise<void> {
    // Every relay drops the machine's link if it holds it (also when the answer was lost after the commit).
    await this.notices.after({ kind: "machine", machineId: id }, () => this.db.updateTable("machines").set({ token_hash: tokenHash }).where("id", "=", id).execute());
  }

  /** Revokes a machine for good: its token hash is replaced by one no token matches. */
  async revoke(id: string, unmatchableHash: string, now = Date.now()): Promise<void> {
    await this.notices.after({ kind: "machine", machineId: id }, () =>
      this.db
        .updateTable("machines")
        .set((eb) => ({ revoked_at: eb.fn.coalesce("revoked_at", eb.val(now)), token_hash: unmatchableHash }))
        .where("id", "=", id)
        .execute(),
    );
  }

  setInventory(id: string, inventory: MachineInventory): Promise<void> {
    return this.linkWrites.write({ kind: "inventory", key: id, inventory: JSON.stringify(inventory) });
  }

  /** Offline, unless the machine is linked to another relay by now (it moved there before this relay saw it go). */
  markOffline(id: string, now = Date.now()): Promise<void> {
    return this.linkWrites.write({ kind: "offline", key: id, now });
  }

  /** One statement for link writes of one kind (no machine twice). */
  private async writeRows(run: LinkWrite[]): Promise<void> {
    const ids = run.map((w) => w.key);
    const update = this.db.updateTable("machines").where("id", "in", ids);
    switch (run[0]!.kind) {
      case "online": {
        const writes = run as Extract<LinkWrite, { kind: "online" }>[];
        await update
          .set({
            state: "online",
            hardware_json: byId(writes, (w) => w.hardware),
            agent_version: byId(writes, (w) => w.agentVersion),
            last_seen_at: byId(writes, (w) => w.now),
            relay_id: this.relayId,
          })
          .execute();
        return;
      }
      case "offline":
        await update
          .set({ state: "offline", last_seen_at: byId(run as Extract<LinkWrite, { kind: "offline" }>[], (w) => w.now) })
          .where("state", "=", "online")
          .where((eb) => (this.relayId === null ? eb.lit(true) : eb.or([eb("relay_id", "is", null), eb("relay_id", "=", this.relayId)])))
          .execute();
        return;
      case "hardware":
        await update.set({ hardware_json: byId(run as Extract<LinkWrite, { kind: "hardware" }>[], (w) => w.hardware) }).execute();
        return;
      case "inventory":
        await update.set({ inventory_json: byId(run as Extract<LinkWrite, { kind: "inventory" }>[], (w) => w.inventory) }).execute();
        return;
    }
  }

  /** The machines whose links this relay holds are online through it (again: another relay may have marked them offline). */
  async markHeld(ids: string[]): Promise<void> {
    if (ids.length === 0 || this.relayId === null) return;
    await this.db.updateTable("machines").set({ state: "online", relay_id: this.relayId }).where("id", "in", ids).execute();
  }

  /**
   * Machines shown online through a relay that is gone (stopped, or not seen for `goneAfterMs`) are offline:
   * run by every relay on a PostgreSQL database (on its clock). Returns them.
   */
  async markOfflineWhereRelayGone(goneAfterMs: number): Promise<{ id: string; orgId: string }[]> {
    const rows = await this.db
      .updateTable("machines")
      .set({ state: "offline" })
      .where("state", "=", "online")
      .where((eb) =>
        eb.or([
          eb("relay_id", "is", null),
          eb("relay_id", "not in", eb.selectFrom("relays").select("id").where("seen_at", ">", sql<number>`${databaseNowMs} - ${goneAfterMs}`)),
        ]),
      )
      .returning(["id", "org_id"])
      .execute();
    return rows.map((r) => ({ id: r.id, orgId: r.org_id }));
  }

  /** At relay start no link exists yet, so every machine that was online is offline. */
  async markAllOffline(): Promise<void> {
    await this.db.updateTable("machines").set({ state: "offline" }).where("state", "=", "online").execute();
  }
}
