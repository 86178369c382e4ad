import type { SsoDeps } from "../control/index.js";
import { SingleSignOn } from "../sso/single-sign-on.js";
import type { Store } from "../store/index.js";
import type { Vault } from "../vault/index.js";
import type { Shared } from "./relay-parts.js";

/** Single sign-on: organizations' client secrets sealed in the vault, and the sign-in through their providers. */
export function ssoDeps(s: Shared, d: { store: Store; vault: Vault }): SsoDeps {
  const { config, log } = s;
  const secrets = d.vault.shelf("sso_client_secret");
  const reach = { allowPrivate: config.ssoAllowPrivate };
  const signOn = new SingleSignOn({ store: d.store, secrets, reach, log: log.child({ component: "sso" }) });
  return { signOn, secrets, reach, sessionTtlMs: config.ssoSessionHours * 3_600_000 };
}
