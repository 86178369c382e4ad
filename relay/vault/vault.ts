import type { Logger } from "../../proto/index.js";
import type { SettingsStore } from "../store/index.js";
import { isSealed, SecretsKey, SecretsKeyError } from "./secrets-key.js";

/** Secrets of one kind in the vault, each by the id of what it belongs to. */
export interface SecretShelf {
  /** The secret, made by `make` (and kept) when there is none. */
  make(id: string, make: () => string): Promise<string>;
  set(id: string, value: string): Promise<void>;
  read(id: string): Promise<string | undefined>;
  forget(id: string): Promise<void>;
}

/** The setting that names the key the database's secrets are sealed with (its id: no secret). */
export const SECRETS_KEY_ID = "secrets_key_id";

/**
 * The relay's secrets kept in the database's settings (the relays' shared secret, the link's CA and install
 * keys, and any to come), sealed with the secrets key, which the database never holds. A secret found in
 * clear (written by an earlier version) is sealed in place the first time it is read.
 */
export class Vault {
  /**
   * @param key the secrets key, or why this relay has none (given none, on a database that names one); reading
   * a secret then throws that.
   */
  constructor(
    private readonly settings: SettingsStore,
    private readonly key: SecretsKey | SecretsKeyError,
    private readonly log: Logger,
  ) {}

  /** The id of the key secrets are sealed with here (undefined when this relay has none). */
  get keyId(): string | undefined {
    return this.key instanceof SecretsKey ? this.key.id : undefined;
  }

  /** The secret `name`, or undefined when no relay has stored it yet. */
  async get(name: string): Promise<string | undefined> {
    const key = this.usable();
    const stored = await this.settings.get(name);
    if (stored === undefined) return undefined;
    if (isSealed(stored)) return key.open(name, stored);
    // In clear: sealed now, unless another relay sealed it meanwhile (the value is the same either way).
    if (await this.settings.swap([{ key: name, from: stored, to: key.seal(name, stored) }])) {
      this.log.info("a secret kept in clear in the database is now sealed with the secrets key", { setting: name, secretsKeyId: key.id });
    }
    return stored;
  }

  /** Stores the secret `name` (sealed), replacing what was there. */
  async set(name: string, value: string): Promise<void> {
    await this.settings.set(name, this.usable().seal(name, value));
  }

  /**
   * A shelf of secrets kept under one name each (`{prefix}:{id}`): a webhook's signing secret, an organization's
   * client secret.
   */
  shelf(prefix: string): SecretShelf {
    const name = (id: string) => `${prefix}:${id}`;
    return {
      make: (id, make) => this.getOrMake(name(id), make),
      set: (id, value) => this.set(name(id), value),
      read: (id) => this.get(name(id)),
      forget: (id) => this.settings.delete(name(id)),
    };
  }

  private usable(): SecretsKey {
    if (this.key instanceof SecretsKeyError) throw this.key;
    return this.key;
  }

  /**
   * The secret `name`: the stored one, or `make()`'s stored now when there is none. Two relays making it at
   * the same moment both get the one stored first.
   */
  async getOrMake(name: string, make: () => string): Promise<string> {
    for (;;) {
      const stored = await this.get(name);
      if (stored !== undefined) return stored;
      const made = make();
      if (await this.settings.setIfAbsent(name, this.usable().seal(name, made))) return made;
    }
  }
}
