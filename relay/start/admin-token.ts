import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import type { Logger } from "../../proto/index.js";
import { relayPaths } from "../config.js";
import { hashSecret, newSecret } from "../keys/index.js";
import { ADMIN_TOKEN_HASH } from "../routing/index.js";
import type { Store } from "../store/index.js";

/**
 * The admin token: read from the data directory, or made on first start (mode 0600); the database keeps its
 * hash, which is what every relay checks. With SQLite the file is the truth (replace it to change the token).
 * On PostgreSQL the token is the deployment's: the first relay makes it, and a relay whose data directory has
 * no copy of it (or another one) accepts the deployment's all the same, and says so; it returns null then.
 */
export async function ensureAdminToken(store: Store, dataDir: string, log: Logger): Promise<string | null> {
  const file = relayPaths(dataDir).adminToken;
  const stored = await store.settings.get(ADMIN_TOKEN_HASH);
  const shared = store.dialect === "postgres";
  if (existsSync(file)) {
    const token = readFileSync(file, "utf8").trim();
    const hash = hashSecret(token);
    if (stored === hash) return token;
    if (!shared) {
      await store.settings.set(ADMIN_TOKEN_HASH, hash);
      return token;
    }
    if (stored === undefined && (await store.settings.setIfAbsent(ADMIN_TOKEN_HASH, hash))) return token;
    log.warn(`${file} is not this deployment's admin token: the relays on this database accept the token another relay made; copy that relay's admin-token file here`);
    return null;
  }
  const token = newSecret("mk_admin_");
  const hash = hashSecret(token);
  if (!shared) await store.settings.set(ADMIN_TOKEN_HASH, hash);
  else if (!(await store.settings.setIfAbsent(ADMIN_TOKEN_HASH, hash))) {
    log.info(`this relay accepts the deployment's admin token, made by another relay; copy that relay's admin-token file to ${file} for makina admin --data-dir here`);
    return null;
  }
  writeFileSync(file, token + "\n", { mode: 0o600 });
  chmodSync(file, 0o600);
  return token;
}
