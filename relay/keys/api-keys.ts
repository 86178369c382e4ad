import { MakinaError, type ServiceTier } from "../../proto/index.js";
import type { ApiKeyRecord, Store } from "../store/index.js";
import { bearerToken } from "./bearer-token.js";
import type { Budget } from "../admin-contract/budgets.js";
import { hashSecret, hashesEqual, maskSecret, newSecret } from "./secrets.js";

export type { ApiKeyRecord };

/** Options for a new API key. */
export interface NewApiKey {
  orgId: string;
  name?: string | null;
  stackIds?: string[] | null;
  machineIds?: string[] | null;
  rpm?: number | null;
  tpm?: number | null;
  /** The user creating it; absent or `null` with the admin token. */
  createdBy?: string | null;
  /** When it stops working (ms since the epoch); absent or `null`: never. */
  expiresAt?: number | null;
  /** The most its requests may ask of the service tiers; absent: `default`. */
  serviceTier?: ServiceTier;
  /** Its token budget per calendar period; absent or `null`: none. */
  budget?: Budget | null;
}

/** A key as shown to admins: never a secret or its hash. */
export type PublicApiKey = Omit<ApiKeyRecord, "keyHash" | "oldKeyHash">;

export function publicKey(record: ApiKeyRecord): PublicApiKey {
  const { keyHash: _hash, oldKeyHash: _old, ...rest } = record;
  return rest;
}

/** The most a regenerated key's old secret keeps working: a day. */
export const MAX_OLD_SECRET_MS = 24 * 3_600_000;

/**
 * Gives a key a new secret, the old one working `graceMs` more (0 to a day); the returned `key` is the only time
 * the new secret exists outside the caller. Undefined when the key is gone or revoked.
 */
export async function regenerateApiKey(store: Store, id: string, graceMs: number, now = Date.now()): Promise<{ key: string; record: PublicApiKey } | undefined> {
  const key = newSecret("mk_live_");
  const record = await store.keys.regenerate(id, { prefix: key.slice(0, 12), keyHash: hashSecret(key) }, now + Math.min(MAX_OLD_SECRET_MS, Math.max(0, graceMs)), now);
  return record && { key, record: publicKey(record) };
}

/** Creates a key; the returned `key` is the only time the secret exists outside the caller. */
export async function createApiKey(store: Store, input: NewApiKey): Promise<{ key: string; record: PublicApiKey }> {
  const key = newSecret("mk_live_");
  const record = await store.keys.insert({
    orgId: input.orgId,
    name: input.name ?? null,
    prefix: key.slice(0, 12),
    keyHash: hashSecret(key),
    stackIds: input.stackIds?.length ? input.stackIds : null,
    machineIds: input.machineIds?.length ? input.machineIds : null,
    rpm: input.rpm ?? null,
    tpm: input.tpm ?? null,
    createdBy: input.createdBy ?? null,
    expiresAt: input.expiresAt ?? null,
    serviceTier: input.serviceTier ?? "default",
    budget: input.budget ?? null,
  });
  return { key, record: publicKey(record) };
}

/** A key that exists but is refused, and why: revoked, or made by a person an admin disabled. */
export interface RefusedKey {
  record: ApiKeyRecord;
  why: "revoked" | "maker_disabled";
}

/** Where {@link identifyApiKey} finds keys and {@link admitApiKey} records their use: the gateway's directory. */
export interface KeyLookup {
  /** A key that may be served, by the hash of its secret. */
  findByHash(keyHash: string): ApiKeyRecord | undefined;
  /** A key known but never served (revoked lately, its maker disabled): its requests are still its own. */
  findRefused?(keyHash: string): RefusedKey | undefined;
  touch(id: string, now?: number): void;
}

/** A key an `Authorization` header named, as {@link identifyApiKey} found it: whatever its state. */
export interface NamedApiKey {
  record: ApiKeyRecord;
  /** The secret as the header gave it (masked in any refusal). */
  token: string;
  /** Why it is refused whatever else holds (revoked, its maker disabled); absent for a key that may be served. */
  refused?: RefusedKey["why"];
  /** The header gave the key's old secret (it was regenerated), which works only until `oldSecretUntil`. */
  old?: boolean;
}

const invalidKey = (shown: string) => new MakinaError("invalid_api_key", `Incorrect API key provided: ${shown}. You can find your API keys in the Makina web application.`);

/**
 * The key the `Authorization` header of a gateway request names, whatever its state (revoked, expired): from
 * here the request is the key's, and its refusals are logged as its own. Throws `missing_api_key` or
 * `invalid_api_key` when the header names no key. The lookup must give the key's current state (the directory,
 * refreshed for this request).
 */
export function identifyApiKey(keys: KeyLookup, authorization: string | undefined): NamedApiKey {
  if (authorization === undefined || authorization.trim() === "") {
    throw new MakinaError(
      "missing_api_key",
      "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
    );
  }
  const token = bearerToken(authorization);
  if (!token) throw invalidKey("(not a bearer token)");
  const hash = hashSecret(token);
  const live = token.startsWith("mk_live_");
  const record = live ? keys.findByHash(hash) : undefined;
  if (record && hashesEqual(record.keyHash, hash)) return { record, token };
  if (record?.oldKeyHash && hashesEqual(record.oldKeyHash, hash)) return { record, token, old: true };
  const refused = live ? keys.findRefused?.(hash) : undefined;
  if (refused && (hashesEqual(refused.record.keyHash, hash) || (refused.record.oldKeyHash !== null && hashesEqual(refused.record.oldKeyHash, hash)))) return { record: refused.record, token, refused: refused.why };
  throw invalidKey(maskSecret(token));
}

/** Lets a named key in, or refuses it as the gateway refuses any unknown key (revoked; expired, saying so); records its use. */
export function admitApiKey(keys: KeyLookup, named: NamedApiKey, now = Date.now()): ApiKeyRecord {
  const { record, token } = named;
  // Its holder is told why: they had the key, and what to ask for.
  if (named.refused === "revoked" || record.state !== "active") {
    const when = record.revokedAt === null ? "" : ` at ${new Date(record.revokedAt).toISOString()}`;
    throw new MakinaError("invalid_api_key", `Incorrect API key provided: ${maskSecret(token)}. This key was revoked${when}; ask an admin of the organization for a new one.`);
  }
  if (named.refused === "maker_disabled") {
    throw new MakinaError("invalid_api_key", `Incorrect API key provided: ${maskSecret(token)}. The person who made this key is disabled, and so are their keys; ask an admin of the organization.`);
  }
  if (record.blockedAt !== null) {
    throw new MakinaError("invalid_api_key", `Incorrect API key provided: ${maskSecret(token)}. An admin of the organization blocked this key at ${new Date(record.blockedAt).toISOString()}; it works again once they unblock it.`);
  }
  if (named.old && now >= (record.oldSecretUntil ?? 0)) {
    const made = record.regeneratedAt === null ? "" : ` at ${new Date(record.regeneratedAt).toISOString()}`;
    throw new MakinaError("invalid_api_key", `Incorrect API key provided: ${maskSecret(token)}. This key was given a new secret${made}, and this one stopped working at ${new Date(record.oldSecretUntil ?? 0).toISOString()}; use the new secret.`);
  }
  // An expired key is refused as a revoked one is; its holder is told why.
  if (record.expiresAt !== null && now >= record.expiresAt) {
    throw new MakinaError("invalid_api_key", `Incorrect API key provided: ${maskSecret(token)}. This key expired at ${new Date(record.expiresAt).toISOString()}; ask an admin of the organization to extend it, or make a new one.`);
  }
  keys.touch(record.id, now);
  return record;
}

/**
 * Checks the `Authorization` header of a gateway request: the key it names, if that key may be used now. A revocation holds
 * for the very next request (the lookup is the directory, refreshed for it).
 */
export function authenticateApiKey(keys: KeyLookup, authorization: string | undefined, now = Date.now()): ApiKeyRecord {
  return admitApiKey(keys, identifyApiKey(keys, authorization), now);
}
