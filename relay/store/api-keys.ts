import type { Db } from "./open-database.js";
import { newId } from "../ids/index.js";

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
}

interface Row {
  id: string;
  org_id: string;
  name: string | null;
  prefix: string;
  key_hash: string;
  stack_ids_json: string | null;
  machine_ids_json: string | null;
  rpm: number | null;
  tpm: number | null;
  state: "active" | "revoked";
  created_at: number;
  revoked_at: number | null;
  last_used_at: number | null;
  created_by: string | null;
}

const toKey = (r: Row): ApiKeyRecord => ({
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
});

/** How long a key's last use may wait in memory before it is written. */
const TOUCH_FLUSH_MS = 1000;

/**
 * API keys in SQLite. Reads of a key's state always go to the database, so a revocation holds for the
 * very next request. Last-use times are kept in memory and written together at most a second later
 * (a write per request cost the gateway more than the rest of the key check); reads of `lastUsedAt`
 * write them first.
 */
export class ApiKeyStore {
  private readonly byHash;
  private readonly touchOne;
  private readonly touched = new Map<string, number>();
  private touchTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Db,
    private readonly onWriteError?: (what: string, err: unknown) => void,
  ) {
    this.byHash = db.prepare("SELECT * FROM api_keys WHERE key_hash = ?");
    this.touchOne = db.prepare("UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)");
  }

  insert(
    input: Pick<ApiKeyRecord, "orgId" | "name" | "prefix" | "keyHash" | "stackIds" | "machineIds" | "rpm" | "tpm" | "createdBy">,
    now = Date.now(),
  ): ApiKeyRecord {
    const id = newId("key");
    this.db
      .prepare(
        `INSERT INTO api_keys (id, org_id, name, prefix, key_hash, stack_ids_json, machine_ids_json, rpm, tpm, created_at, created_by)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        id,
        input.orgId,
        input.name,
        input.prefix,
        input.keyHash,
        input.stackIds ? JSON.stringify(input.stackIds) : null,
        input.machineIds ? JSON.stringify(input.machineIds) : null,
        input.rpm,
        input.tpm,
        now,
        input.createdBy,
      );
    return this.get(id)!;
  }

  get(id: string): ApiKeyRecord | undefined {
    this.flushTouches();
    const row = this.db.prepare("SELECT * FROM api_keys WHERE id = ?").get(id) as Row | undefined;
    return row && toKey(row);
  }

  findByHash(keyHash: string): ApiKeyRecord | undefined {
    const row = this.byHash.get(keyHash) as Row | undefined;
    return row && toKey(row);
  }

  listByOrg(orgId: string): ApiKeyRecord[] {
    this.flushTouches();
    return (this.db.prepare("SELECT * FROM api_keys WHERE org_id = ? ORDER BY created_at, id").all(orgId) as Row[]).map(toKey);
  }

  /** Revokes a key (final). Returns the key, or undefined when there is none. */
  revoke(id: string, now = Date.now()): ApiKeyRecord | undefined {
    this.db.prepare("UPDATE api_keys SET state = 'revoked', revoked_at = COALESCE(revoked_at, ?) WHERE id = ?").run(now, id);
    return this.get(id);
  }

  /** Records a key's use; written with the others within a second. */
  touch(id: string, now = Date.now()): void {
    this.touched.set(id, now);
    if (!this.touchTimer) {
      this.touchTimer = setTimeout(() => this.flushTouches(), TOUCH_FLUSH_MS);
      this.touchTimer.unref();
    }
  }

  /**
   * Writes the last-use times recorded since the last write, in one transaction. When the database refuses
   * the write (a full disk, a lock), the times are kept and written again a second later.
   */
  flushTouches(): void {
    clearTimeout(this.touchTimer);
    this.touchTimer = undefined;
    if (this.touched.size === 0 || !this.db.open) return;
    const touched = [...this.touched];
    this.touched.clear();
    try {
      this.db.transaction(() => {
        for (const [id, at] of touched) this.touchOne.run(at, id, at);
      })();
    } catch (err) {
      for (const [id, at] of touched) this.touched.set(id, Math.max(at, this.touched.get(id) ?? 0));
      this.touchTimer = setTimeout(() => this.flushTouches(), TOUCH_FLUSH_MS);
      this.touchTimer.unref();
      if (!this.onWriteError) throw err;
      this.onWriteError("key last-use times", err);
    }
  }
}
