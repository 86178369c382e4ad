import { MakinaError } from "../../proto/index.js";
import type { ApiKeyRecord, Store } from "../store/index.js";
import { bearerToken } from "./bearer-token.js";
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
}

/** A key as shown to admins: never the secret or its hash. */
export type PublicApiKey = Omit<ApiKeyRecord, "keyHash">;

export function publicKey(record: ApiKeyRecord): PublicApiKey {
  const { keyHash: _hash, ...rest } = record;
  return rest;
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
  });
  return { key, record: publicKey(record) };
}

/** Where {@link authenticateApiKey} finds keys and records their use: the gateway's directory. */
export interface KeyLookup {
  findByHash(keyHash: string): ApiKeyRecord | undefined;
  touch(id: string, now?: number): void;
}

/**
 * Checks the `Authorization` header of a gateway request. The lookup must give the key's current state
 * (the directory, refreshed for this request), so a revocation holds for the very next request.
 */
export function authenticateApiKey(keys: KeyLookup, authorization: string | undefined, now = Date.now(), seen?: { key: ApiKeyRecord | undefined }): ApiKeyRecord {
  if (authorization === undefined || authorization.trim() === "") {
    throw new MakinaError(
      "missing_api_key",
      "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
    );
  }
  const token = bearerToken(authorization);
  const invalid = (shown: string) =>
    new MakinaError("invalid_api_key", `Incorrect API key provided: ${shown}. You can find your API keys in the Makina web application.`);
  if (!token) throw invalid("(not a bearer token)");
  const hash = hashSecret(token);
  const record = token.startsWith("mk_live_") ? keys.findByHash(hash) : undefined;
  if (!record || !hashesEqual(record.keyHash, hash)) throw invalid(maskSecret(token));
  // The key is known from here, refused or not: `seen` gets it, so its refusals count as its own.
  if (seen) seen.key = record;
  if (record.state !== "active") throw invalid(maskSecret(token));
  // An expired key is refused as a revoked one is; its holder is told why.
  if (record.expiresAt !== null && now >= record.expiresAt) {
    throw new MakinaError("invalid_api_key", `Incorrect API key provided: ${maskSecret(token)}. This key expired at ${new Date(record.expiresAt).toISOString()}; ask an admin of the organization to extend it, or make a new one.`);
  }
  keys.touch(record.id, now);
  return record;
}
