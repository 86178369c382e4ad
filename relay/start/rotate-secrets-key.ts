import { existsSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { relayPaths, type RelayConfig } from "../config.js";
import { lockDataDir } from "../data-dir-lock.js";
import { openStore } from "../store/index.js";
import { readSecretsKeyFile, rotateSecrets, SecretsKey, SecretsKeyError, secretsKeyFile, writeSecretsKeyFile } from "../vault/index.js";

/** What `makina secrets-key rotate` did. */
export interface RotatedSecretsKey {
  /** The id of the key the secrets were sealed with. */
  readonly from: string;
  /** The id of the key they are sealed with now. */
  readonly to: string;
  /** Where the new key is. */
  readonly keyFile: string;
  /** Where the old key was moved (the data directory's, kept to open older backups), or null when it was given. */
  readonly retiredFile: string | null;
  /** The settings sealed again. */
  readonly resealed: readonly string[];
}

/**
 * Seals the database's secrets with a new secrets key, in one transaction. The key in use is the one the relay
 * would be given (`config`: MAKINA_SECRETS_KEY, --secrets-key-file, or the data directory's). The new key is
 * read from `newKeyFile` when it exists (an operator's `openssl rand -base64 32 > FILE`), or made into it; with
 * neither given, the data directory's own key is replaced (the old one moved beside it). On SQLite the relay must
 * be stopped (its data directory is locked while it runs); on PostgreSQL relays running keep serving, and each
 * must be given the new key before it starts again.
 */
export async function rotateSecretsKey(config: RelayConfig, newKeyFile: string | null): Promise<RotatedSecretsKey> {
  const own = secretsKeyFile(config.dataDir);
  const from = config.secretsKey
    ? SecretsKey.parse(config.secretsKey, "MAKINA_SECRETS_KEY")
    : readSecretsKeyFile(config.secretsKeyFile ?? own);
  const replacingOwn = newKeyFile === null && !config.secretsKey && config.secretsKeyFile === null;
  if (newKeyFile === null && !replacingOwn) {
    throw new SecretsKeyError("give --new-key-file FILE: where the new secrets key is read from, or written to (the key in use was given to this command, not taken from the data directory)");
  }
  const target = newKeyFile ?? own;
  // The data directory's key is replaced once the database holds the new one: until then it waits beside it.
  const writeTo = replacingOwn ? `${own}.new` : target;
  const made = replacingOwn || !existsSync(target);
  // On SQLite, not while the relay runs (it would go on with its own copy of what is rotated).
  const lock = config.database ? undefined : lockDataDir(config.dataDir);
  let to: SecretsKey;
  let resealed: string[];
  try {
    if (replacingOwn) rmSync(writeTo, { force: true });
    to = made ? SecretsKey.generate() : readSecretsKeyFile(target);
    if (made) writeSecretsKeyFile(writeTo, to);
    try {
      const store = await openStore(config.database ? { kind: "postgres", url: config.database } : { kind: "sqlite", file: relayPaths(config.dataDir).database });
      try {
        resealed = await rotateSecrets(store.settings, from, to);
      } finally {
        await store.close();
      }
    } catch (err) {
      // Nothing changed in the database: a key this command made is of no use.
      if (made) rmSync(writeTo, { force: true });
      throw err;
    }
  } finally {
    lock?.release();
  }
  let retiredFile: string | null = null;
  if (replacingOwn) {
    retiredFile = join(config.dataDir, `secrets-${from.id}.key.retired`);
    renameSync(own, retiredFile);
    renameSync(writeTo, own);
  }
  return { from: from.id, to: to.id, keyFile: target, retiredFile, resealed };
}
