import type { ServiceTier } from "../../proto/index.js";
import type { Budget, BudgetLine, BudgetPeriod } from "../admin-contract/budgets.js";
import type { Db } from "./open-database.js";
import { transaction } from "./transaction.js";
import type { Updateable } from "kysely";
import type { Row, Tables } from "./tables.js";
import type { ChangeNotices } from "./change-notices.js";
import { newId } from "../ids/index.js";
import { keyPage, type KeyPageAsk } from "./key-page.js";

/** An API key as stored: never the secret, only its hash and a display prefix. */
export interface ApiKeyRecord {
  id: string;
  orgId: string;
  name: string | null;
  /** First characters of the key, for display (`mk_live_AbCd`). */
  prefix: string;
  keyHash: string;
  /** Stacks the key is limited to; `null` for no restriction. */
  stackIds: string[] | null;
  /** Machines the key is limited to; `null` for no restriction. */
  machineIds: string[] | null;
  /** Requests per minute; `null` for no limit. */
  rpm: number | null;
  /** Tokens per minute; `null` for no limit. */
  tpm: number | null;
  state: "active" | "revoked";
  createdAt: number;
  revokedAt: number | null;
  lastUsedAt: number | null;
  /** The user who created it; `null` when made with the admin token. */
  createdBy: string | null;
  /** From this time on (ms since the epoch) the key answers 401 as a revoked one does; `null`: never. */
  expiresAt: number | null;
  /** Since when an admin has blocked it (refused until unblocked); `null`: not blocked. */
  blockedAt: number | null;
  /** When its secret was last made again; `null`: never. */
  regeneratedAt: number | null;
  /** The hash of the secret it had before (never shown); `null`: none. */
  oldKeyHash: string | null;
  /** Until when the old secret still works (ms since the epoch); `null`: there is none. */
  oldSecretUntil: number | null;
  /** The most its requests may ask of the service tiers (they ask it when they ask none). */
  serviceTier: ServiceTier;
  /** Its token budget per calendar period; `null`: none (its organization's may still hold). */
  budget: Budget | null;
  /** The budgets its requests count against (its own, its organization's), as the gateway's directory fills them in. */
  budgets?: BudgetLine[];
}

/** What can change of a key after it is made (its secret, organization and maker cannot); absent: unchanged. */
export type ApiKeyChanges = Partial<Pick<ApiKeyRecord, "name" | "stackIds" | "machineIds" | "rpm" | "tpm" | "expiresAt" | "serviceTier" | "budget">>;

const toKey = (r: Row<"api_keys">): ApiKeyRecord => ({
  id: r.id,
  orgId: r.org_id,
  name: r.name,
  prefix: r.prefix,
  keyHash: r.key_hash,
  stackIds: r.stack_ids_json ? (JSON.parse(r.stack_ids_json) as string[]) : null,
  machineIds: r.machine_ids_json ? (JSON.parse(r.machine_ids_json) as string[]) : null,
  rpm: r.rpm,
  tpm: r.tpm,
  state: r.state,
  createdAt: r.created_at,
  revokedAt: r.revoked_at,
  lastUsedAt: r.last_used_at,
  createdBy: r.created_by,
  expiresAt: r.expires_at,
  blockedAt: r.blocked_at,
  regeneratedAt: r.regenerated_at,
  oldKeyHash: r.old_key_hash,
  oldSecretUntil: r.old_secret_until,
  serviceTier: r.service_tier,
  budget: budgetOf(r),
});

/** A row's budget columns as a budget, or null. */
export const budgetOf = (r: { budget_tokens: number | null; budget_period: BudgetPeriod | null }): Budget | null =>
  r.budget_tokens !== null && r.budget_period !== null ? { tokens: Number(r.budget_tokens), period: r.budget_period } : null;

/** How long a key's last use may wait in memory before it is written. */
const TOUCH_FLUSH_MS = 1000;

/**
 * API keys. Creating and revoking one is announced ({@link ChangeNotices}) before the call returns, so the
 * gateway's directory holds it for the very next request. Last-use times are kept in memory and written
 * together at most a second later (a write per request cost the gateway more than the rest of the key
 * check); reads of `lastUsedAt` write them first.
 */
export class ApiKeyStore {
  private readonly touched = new Map<string, number>();
  private touchTimer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly db: Db,
    private readonly dialect: "sqlite" | "postgres",
    private readonly notices: ChangeNotices,
    private readonly onWriteError?: (what: string, err: unknown) => void,
  ) {}

  async insert(
    input: Pick<ApiKeyRecord, "orgId" | "name" | "prefix" | "keyHash" | "stackIds" | "machineIds" | "rpm" | "tpm" | "createdBy"> & { expiresAt?: number | null; serviceTier?: ServiceTier; budget?: Budget | null },
    now = Date.now(),
  ): Promise<ApiKeyRecord> {
    const id = newId("key");
    await this.db
      .insertInto("api_keys")
      .values({
        id,
        org_id: input.orgId,
        name: input.name,
        prefix: input.prefix,
        key_hash: input.keyHash,
        stack_ids_json: input.stackIds ? JSON.stringify(input.stackIds) : null,
        machine_ids_json: input.machineIds ? JSON.stringify(input.machineIds) : null,
        rpm: input.rpm,
        tpm: input.tpm,
        created_at: now,
        created_by: input.createdBy,
        expires_at: input.expiresAt ?? null,
        service_tier: input.serviceTier ?? "default",
        budget_tokens: input.budget?.tokens ?? null,
        budget_period: input.budget?.period ?? null,
      })
      .execute();
    await this.notices.changed({ kind: "key", keyId: id });
    return (await this.get(id))!;
  }

  async get(id: string): Promise<ApiKeyRecord | undefined> {
    await this.flushTouches();
    const row = await this.db.selectFrom("api_keys").selectAll().where("id", "=", id).executeTakeFirst();
    return row && toKey(row);
  }

  /** The key with this id as last written (its last use may still be in memory). */
  async findById(id: string): Promise<ApiKeyRecord | undefined> {
    const row = await this.db.selectFrom("api_keys").selectAll().where("id", "=", id).executeTakeFirst();
    return row && toKey(row);
  }

  /** The names of keys by id (an unnamed key's prefix and `…`), 500 ids a statement: what lists of use show for a key. */
  async namesOf(ids: readonly string[]): Promise<Map<string, string>> {
    const names = new Map<string, string>();
    for (let i = 0; i < ids.length; i += 500) {
      const rows = await this.db.selectFrom("api_keys").select(["id", "name", "prefix"]).where("id", "in", ids.slice(i, i + 500)).execute();
      for (const r of rows) names.set(r.id, r.name ?? `${r.prefix}…`);
    }
    return names;
  }

  /** The key with this hash, straight from the database (the gateway reads its directory instead). */
  async findByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    const row = await this.db.selectFrom("api_keys").selectAll().where("key_hash", "=", keyHash).executeTakeFirst();
    return row && toKey(row);
  }

  async listByOrg(orgId: string): Promise<ApiKeyRecord[]> {
    await this.flushTouches();
    return (await this.db.selectFrom("api_keys").selectAll().where("org_id", "=", orgId).orderBy("created_at").orderBy("id").execute()).map(toKey);
  }

  /**
   * One page of an organization's keys, searched, filtered and sorted by the database (see {@link keyPage}), each
   * with its requests and tokens since `ask.usageSince` (usage the caller has flushed).
   */
  async page(orgId: string, ask: KeyPageAsk): Promise<{ keys: (ApiKeyRecord & { requests: number; tokens: number })[]; total: number }> {
    await this.flushTouches();
    const { rows, total } = await keyPage(this.db, this.dialect, orgId, ask);
    return { keys: rows.map((r) => ({ ...toKey(r), requests: r.requests, tokens: r.tokens })), total };
  }

  /** How many keys a person made that are not revoked (expired ones included: they can be given a new expiry). */
  async countActiveBy(userId: string): Promise<number> {
    const row = await this.db
      .selectFrom("api_keys")
      .select((eb) => eb.fn.countAll<number | string>().as("n"))
      .where("created_by", "=", userId)
      .where("state", "=", "active")
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Every active key (of one organization, or of all) whose maker is still a user (or was the operator): what the gateway's directory holds. */
  async listActive(orgId?: string): Promise<ApiKeyRecord[]> {
    let query = this.db
      .selectFrom("api_keys")
      .selectAll()
      .where("state", "=", "active")
      .where((eb) => eb.or([eb("created_by", "is", null), eb("created_by", "in", eb.selectFrom("users").select("id"))]));
    if (orgId !== undefined) query = query.where("org_id", "=", orgId);
    return (await query.execute()).map(toKey);
  }

  /**
   * Keys revoked at or after `since` whose maker is still a user (or was the operator): what the gateway's directory
   * holds to log a revoked key's requests as its own.
   */
  async listRevokedSince(since: number): Promise<ApiKeyRecord[]> {
    const rows = await this.db
      .selectFrom("api_keys")
      .selectAll()
      .where("state", "=", "revoked")
      .where("revoked_at", ">=", since)
      .where((eb) => eb.or([eb("created_by", "is", null), eb("created_by", "in", eb.selectFrom("users").select("id"))]))
      .execute();
    return rows.map(toKey);
  }

  /** Revokes a key (final). Returns the key, or undefined when there is none. */
  async revoke(id: string, now = Date.now()): Promise<ApiKeyRecord | undefined> {
    // Announced also when the answer was lost (the connection cut after the commit): the directory reads the key
    // back, and drops it if it cannot.
    await this.notices.after({ kind: "key", keyId: id }, () =>
      this.db
        .updateTable("api_keys")
        .set((eb) => ({ state: "revoked", revoked_at: eb.fn.coalesce("revoked_at", eb.val(now)) }))
        .where("id", "=", id)
        .execute(),
    );
    return this.get(id);
  }

  /**
   * Blocks a key that is not revoked (`blocked`), or unblocks it, announced like a revocation. Returns the key as it
   * is now, or undefined when there is none. Blocking a blocked key keeps when it was blocked.
   */
  async setBlocked(id: string, blocked: boolean, now = Date.now()): Promise<ApiKeyRecord | undefined> {
    await this.notices.after({ kind: "key", keyId: id }, () =>
      this.db
        .updateTable("api_keys")
        .set((eb) => ({ blocked_at: blocked ? eb.fn.coalesce("blocked_at", eb.val(now)) : null }))
        .where("id", "=", id)
        .where("state", "=", "active")
        .execute(),
    );
    return this.get(id);
  }

  /**
   * Gives a key that is not revoked a new secret (`keyHash`, shown by `prefix`): the secret it had works until
   * `oldUntil` (at most a day, the caller's rule), then is refused; a secret older than that is forgotten.
   * Announced like a revocation. Returns the key as it is now, or undefined when there is none (or it is revoked).
   */
  async regenerate(id: string, secret: { prefix: string; keyHash: string }, oldUntil: number, now = Date.now()): Promise<ApiKeyRecord | undefined> {
    const result = await this.notices.after({ kind: "key", keyId: id }, () =>
      this.db
        .updateTable("api_keys")
        .set((eb) => ({ old_key_hash: eb.ref("key_hash"), old_secret_until: oldUntil, key_hash: secret.keyHash, prefix: secret.prefix, regenerated_at: now }))
        .where("id", "=", id)
        .where("state", "=", "active")
        .executeTakeFirst(),
    );
    return Number(result.numUpdatedRows) === 1 ? this.get(id) : undefined;
  }

  /**
   * Changes what `changes` names of a key that is not revoked, announced like a revocation (every relay's
   * directory holds the change for the next request). Returns the key as it is now, or undefined when there is
   * none; a revoked key is returned unchanged.
   */
  async update(id: string, changes: ApiKeyChanges): Promise<ApiKeyRecord | undefined> {
    const set: Updateable<Tables["api_keys"]> = {};
    if (changes.name !== undefined) set.name = changes.name;
    if (changes.stackIds !== undefined) set.stack_ids_json = changes.stackIds?.length ? JSON.stringify(changes.stackIds) : null;
    if (changes.machineIds !== undefined) set.machine_ids_json = changes.machineIds?.length ? JSON.stringify(changes.machineIds) : null;
    if (changes.rpm !== undefined) set.rpm = changes.rpm;
    if (changes.tpm !== undefined) set.tpm = changes.tpm;
    if (changes.expiresAt !== undefined) set.expires_at = changes.expiresAt;
    if (changes.serviceTier !== undefined) set.service_tier = changes.serviceTier;
    if (changes.budget !== undefined) {
      set.budget_tokens = changes.budget?.tokens ?? null;
      set.budget_period = changes.budget?.period ?? null;
    }
    if (Object.keys(set).length > 0) {
      await this.notices.after({ kind: "key", keyId: id }, () => this.db.updateTable("api_keys").set(set).where("id", "=", id).where("state", "=", "active").execute());
    }
    return this.get(id);
  }

  /** Records a key's use; written with the others within a second. */
  touch(id: string, now = Date.now()): void {
    this.touched.set(id, now);
    if (!this.touchTimer && !this.closed) {
      this.touchTimer = setTimeout(() => void this.flushTouches().catch(() => undefined), TOUCH_FLUSH_MS);
      this.touchTimer.unref();
    }
  }

  /**
   * Writes the last-use times recorded since the last write, in one transaction. When the database refuses
   * the write (a full disk, a lock, a lost connection), the times are kept and written again a second later.
   */
  async flushTouches(): Promise<void> {
    // One write at a time: a read waits for the write in progress, then writes what came since.
    while (this.flushing) await this.flushing;
    clearTimeout(this.touchTimer);
    this.touchTimer = undefined;
    if (this.touched.size === 0) return;
    const touched = [...this.touched];
    this.touched.clear();
    this.flushing = (async () => {
      try {
        await transaction(this.db, async (trx) => {
          for (const [id, at] of touched) {
            await trx
              .updateTable("api_keys")
              .set({ last_used_at: at })
              .where("id", "=", id)
              .where((eb) => eb.or([eb("last_used_at", "is", null), eb("last_used_at", "<", at)]))
              .execute();
          }
        });
      } catch (err) {
        for (const [id, at] of touched) this.touched.set(id, Math.max(at, this.touched.get(id) ?? 0));
        if (!this.closed) {
          this.touchTimer = setTimeout(() => void this.flushTouches().catch(() => undefined), TOUCH_FLUSH_MS);
          this.touchTimer.unref();
        }
        if (!this.onWriteError) throw err;
        this.onWriteError("key last-use times", err);
      } finally {
        this.flushing = undefined;
      }
    })();
    await this.flushing;
  }

  /** Writes what is left and stops writing on its own. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flushTouches();
    clearTimeout(this.touchTimer);
  }
}
