export { startRelay, type Relay } from "./start/start-relay.js";
export { resolveRelayConfig, relayPaths, ConfigError, type RelayConfig, type RelayConfigSources } from "./config.js";
export { hashPassword, hashSecret, verifyPassword, createApiKey } from "./keys/index.js";
export { randomBase62 } from "./ids/index.js";
export type { StackView } from "./control/index.js";
