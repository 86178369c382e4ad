import { chmodSync, existsSync, linkSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../../proto/index.js";
import type { SettingsStore } from "../store/index.js";
import { SecretsKey, SecretsKeyError } from "./secrets-key.js";
import { SECRETS_KEY_ID, Vault } from "./vault.js";

/** Where the relay was given its secrets key. */
export type SecretsKeySource =
  /** The key itself (`MAKINA_SECRETS_KEY`). */
  | { kind: "value"; text: string; name: string }
  /** A file holding it (`--secrets-key-file`). */
  | { kind: "file"; path: string }
  /** Neither: the data directory's `secrets.key`, made on first start. */
  | { kind: "data-dir" };

/** The secrets key file in a data directory. */
export const secretsKeyFile = (dataDir: string) => join(dataDir, "secrets.key");

/** The key in a file; its errors name the file. */
export function readSecretsKeyFile(path: string): SecretsKey {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new SecretsKeyError(`cannot read the secrets key file ${path} (${(err as Error).message})`);
  }
  return SecretsKey.parse(text, path);
}

/** Writes a new key file (readable by this user only); fails when the file exists. */
export function writeSecretsKeyFile(path: string, key: SecretsKey): void {
  writeFileSync(path, key.text() + "\n", { mode: 0o600, flag: "wx" });
  chmodSync(path, 0o600);
}

export interface OpenVaultOptions {
  settings: SettingsStore;
  dataDir: string;
  source: SecretsKeySource;
  /** On PostgreSQL: other relays share the database, and need the key this one makes. */
  shared: boolean;
  /** How the key is given, as an error names it: `--secrets-key-file or MAKINA_SECRETS_KEY_FILE, or MAKINA_SECRETS_KEY`. */
  setting: string;
  log: Logger;
}

/**
 * The vault of the relay's secrets, with the key it was given (or its data directory's). The database names the
 * key its secrets are sealed with (`secrets_key_id`): a relay given another refuses to start rather than make
 * secrets the others cannot read. The first relay on a database given none makes one, into its data directory
 * (readable by its user only); on PostgreSQL it says once where the key is and that every other relay needs it.
 * A relay given none on a database that names one gets a vault that refuses, saying how to give the key, the
 * first time a secret is read (on PostgreSQL, at once: the change feed's notifications are tagged with a secret).
 */
export async function openVault(o: OpenVaultOptions): Promise<Vault> {
  const file = secretsKeyFile(o.dataDir);
  const given =
    o.source.kind === "value" ? SecretsKey.parse(o.source.text, o.source.name) : o.source.kind === "file" ? readSecretsKeyFile(o.source.path) : existsSync(file) ? readSecretsKeyFile(file) : undefined;
  const from = o.source.kind === "value" ? o.source.name : o.source.kind === "file" ? o.source.path : file;
  const stored = await o.settings.get(SECRETS_KEY_ID);
  if (given) {
    if (stored === undefined && (await o.settings.setIfAbsent(SECRETS_KEY_ID, given.id))) return new Vault(o.settings, given, o.log);
    const current = stored ?? (await o.settings.get(SECRETS_KEY_ID));
    if (current !== given.id) {
      throw new SecretsKeyError(`the secrets in this database are sealed with the secrets key ${current}, and this relay was given another (${given.id}, ${from}): give it the key the other relays have (${o.setting})`);
    }
    return new Vault(o.settings, given, o.log);
  }
  const notGiven = (id: string | undefined) =>
    new SecretsKeyError(
      `the secrets in this database are sealed with the secrets key ${id}, which this relay was not given: copy the key file of the relay that made it (its data directory's secrets.key) and give it with ${o.setting}`,
    );
  // Secrets this relay cannot open: it starts all the same, and fails, saying so, only if it needs one.
  if (stored !== undefined) return new Vault(o.settings, notGiven(stored), o.log);
  // The first relay: the key is written beside the file it will have, and takes that name only once the
  // database names it (a relay starting at the same moment may make its own first).
  const made = SecretsKey.generate();
  const pending = `${file}.${process.pid}.new`;
  writeSecretsKeyFile(pending, made);
  try {
    if (!(await o.settings.setIfAbsent(SECRETS_KEY_ID, made.id))) return new Vault(o.settings, notGiven(await o.settings.get(SECRETS_KEY_ID)), o.log);
    linkSync(pending, file);
  } finally {
    unlinkSync(pending);
  }
  if (o.shared) {
    o.log.warn(
      `made the secrets key that seals this deployment's secrets in the database: ${file}. Every other relay on this database needs it (copy the file and give it with ${o.setting}); keep a copy apart from the database's backups: without it, they hold nothing usable, and neither do you`,
      { secretsKeyId: made.id, file },
    );
  } else {
    o.log.info("made the secrets key that seals the relay's secrets in its database", { secretsKeyId: made.id, file });
  }
  return new Vault(o.settings, made, o.log);
}
