import type { SettingsStore } from "../store/index.js";
import { isSealed, SecretsKeyError, type SecretsKey } from "./secrets-key.js";
import { SECRETS_KEY_ID } from "./vault.js";

/**
 * Seals every secret in the database with `to` instead of `from`, and names `to` as the database's key, all in
 * one transaction: relays running keep serving (they read their secrets at start), and each must be given `to`
 * before it starts again. Returns the settings sealed again.
 */
export async function rotateSecrets(settings: SettingsStore, from: SecretsKey, to: SecretsKey): Promise<string[]> {
  const all = await settings.all();
  const named = all.get(SECRETS_KEY_ID);
  if (named === undefined) throw new SecretsKeyError("this database names no secrets key yet: a relay makes one on its first start");
  if (named !== from.id) throw new SecretsKeyError(`the secrets in this database are sealed with the secrets key ${named}, not with the one given (${from.id})`);
  if (to.id === from.id) throw new SecretsKeyError("the new secrets key is the one in use");
  const resealed = [...all].filter(([key, value]) => key !== SECRETS_KEY_ID && isSealed(value));
  const swaps = [{ key: SECRETS_KEY_ID, from: named, to: to.id }, ...resealed.map(([key, value]) => ({ key, from: value, to: to.seal(key, from.open(key, value)) }))];
  if (!(await settings.swap(swaps))) throw new SecretsKeyError("a secret changed while it was being sealed again (a relay starting?): nothing was changed; run the command again");
  return resealed.map(([key]) => key);
}
