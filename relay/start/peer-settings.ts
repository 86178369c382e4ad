import { randomBytes } from "node:crypto";
import { networkInterfaces } from "node:os";
import type { RelayConfig } from "../config.js";
import type { Vault } from "../vault/index.js";

/** Where the relay takes the other relays' direct connections: `--peer-address`, or its HTTP host and any free port. */
export function peerListenAddress(config: RelayConfig): { host: string; port: number } {
  if (config.peerAddress) {
    const at = config.peerAddress.lastIndexOf(":");
    return { host: config.peerAddress.slice(0, at).replace(/^\[(.*)\]$/, "$1"), port: Number(config.peerAddress.slice(at + 1)) };
  }
  if (config.host === "localhost") return { host: "127.0.0.1", port: 0 };
  if (config.host !== "0.0.0.0" && config.host !== "::") return { host: config.host, port: 0 };
  // Listening on every address: the first address other machines can reach.
  const external = Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === "IPv4" && !a.internal);
  return { host: external?.address ?? "127.0.0.1", port: 0 };
}

/** The setting holding the secret the relays on one database share. */
const PEER_SECRET = "peer_secret";

/** The secret the relays on one database share, sealing their messages and direct connections (made by the first relay). */
export function peerSecret(vault: Vault): Promise<string> {
  return vault.getOrMake(PEER_SECRET, () => randomBytes(32).toString("base64url"));
}
