import type { Db } from "./open-database.js";
import { newId } from "./ids.js";

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

/** API keys in SQLite. Reads always go to the database, so a revocation holds for the very next request. */
export class ApiKeyStore {
  constructor(private readonly db: Db) {}

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
    const row = this.db.prepare("SELECT * FROM api_keys WHERE id = ?").get(id) as Row | undefined;
    return row && toKey(row);
  }

  findByHash(keyHash: string): ApiKeyRecord | undefined {
    const row = this.db.prepare("SELECT * FROM api_keys WHERE key_hash = ?").get(keyHash) as Row | undefined;
    return row && toKey(row);
  }

  listByOrg(orgId: string): ApiKeyRecord[] {
    return (this.db.prepare("SELECT * FROM api_keys WHERE org_id = ? ORDER BY created_at, id").all(orgId) as Row[]).map(toKey);
  }

  /** Revokes a key (final). Returns the key, or undefined when there is none. */
  revoke(id: string, now = Date.now()): ApiKeyRecord | undefined {
    this.db.prepare("UPDATE api_keys SET state = 'revoked', revoked_at = COALESCE(revoked_at, ?) WHERE id = ?").run(now, id);
    return this.get(id);
  }

  touch(id: string, now = Date.now()): void {
    this.db.prepare("UPDATE api_keys SET last_used_at = ? WHERE id = ?").run(now, id);
  }
}
