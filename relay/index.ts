import type { Logger } from "../proto/index.js";
import type { RelayConfig } from "./config.js";
import { startRelay as start, type Relay } from "./start/start-relay.js";

export type { Relay } from "./start/start-relay.js";
export { resolveRelayConfig, relayPaths, ConfigError, type RelayConfig, type RelayConfigSources } from "./config.js";
export { BOOTSTRAP, type Actor } from "./auth/index.js";
export type { StackView } from "./control/index.js";

/**
 * Starts a relay (see `relay/start/start-relay.ts`): its parts, in order. What it serves is reached through its
 * control plane, never its database: the relay given here carries no store, at run time as in its type.
 */
export async function startRelay(config: RelayConfig, options?: { log?: Logger }): Promise<Relay> {
  const { store: _store, ...relay } = await start(config, options);
  return relay;
}
export { rotateSecretsKey, type RotatedSecretsKey } from "./start/rotate-secrets-key.js";
