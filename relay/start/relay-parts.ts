import { Parts, type Logger } from "../../proto/index.js";
import type { RelayConfig } from "../config.js";
import { EventBus } from "../events/index.js";
import { AgentRegistry, MachineLoads } from "../link/index.js";
import { GatewayDirectory } from "../routing/index.js";
import { StorageHealth } from "../health/index.js";
import type { Store } from "../store/index.js";
import { ChangeFeed } from "../cluster/index.js";
import type { Vault } from "../vault/index.js";

/** What this relay says of itself to others and in install commands, known as its listeners come up. */
export interface Whereabouts {
  relayUrl: string;
  linkAddress: string;
  install: { url: string; pin: string } | null;
  /** Why the install commands printed work on this computer only, and what to change; null when they reach beyond it. */
  reach: string | null;
  /** Told of users disabled, re-roled or deleted through other relays, once the web sessions exist. */
  userChanged: (userId: string) => void;
}

/** What the first parts give the rest: the database and what is read from it. */
export interface Data {
  store: Store;
  directory: GatewayDirectory;
  adminToken: string | null;
  feed: ChangeFeed | undefined;
  /** The relay's secrets in the database, sealed with the secrets key. */
  vault: Vault;
  /** On PostgreSQL, the secret the relays on the database share (read once, from the vault). */
  peerSecret: string | undefined;
}

/** What every part after the first shares, made before any starts. */
export interface Shared {
  config: RelayConfig;
  log: Logger;
  parts: Parts;
  relayId: string;
  registry: AgentRegistry;
  loads: MachineLoads;
  events: EventBus;
  storage: StorageHealth;
  here: Whereabouts;
  /** Aborted when the drain period is over: what is still in flight is ended, each request with its answer. */
  ending: AbortController;
}

