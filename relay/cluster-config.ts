import { isIPv4 } from "node:net";
import { isLinkAddress } from "./link/index.js";

/** The environment variable of each setting these read, as their problems name them. */
type EnvNames = Readonly<Record<"database" | "redis" | "nats" | "natsCreds" | "natsInsecure" | "peerAddress", string>>;

/** What is wrong with the settings that join a relay to others: the database's, Redis's and NATS's URLs, the peer address. */
export function clusterProblems(database: string | null, redis: string | null, nats: string | null, peerAddress: string | null, ENV: EnvNames): string[] {
  const problems: string[] = [];
  if (database !== null && !/^postgres(ql)?:\/\/[^\s]+$/i.test(database)) {
    problems.push(`database (${ENV.database}) must be a PostgreSQL URL such as postgres://makina:secret@db.example.com:5432/makina (leave it out for SQLite in the data directory)`);
  }
  if (redis !== null && !/^rediss?:\/\/[^\s/]+(\/\d*)?$/i.test(redis)) {
    problems.push(`redis (${ENV.redis}) must be a Redis URL such as redis://:secret@cache.example.com:6379 (leave it out for rate limits in this relay's memory)`);
  }
  if (nats !== null && !/^(nats|tls):\/\/[^\s/]+\/?$/i.test(nats)) {
    problems.push(`nats (${ENV.nats}) must be a NATS URL such as nats://user:secret@bus.example.com:4222 (leave it out for requests on this relay's own links only)`);
  } else if (nats !== null && database === null) {
    problems.push(`nats (${ENV.nats}) joins relays that share a PostgreSQL database: give database (${ENV.database}) too`);
  }
  if (peerAddress !== null && peerAddress !== "off" && !isLinkAddress(peerAddress, { anyPort: true })) {
    problems.push(`peerAddress (${ENV.peerAddress}) must be HOST:PORT (port 0 for any free one, 65535 at most), such as 10.0.0.5:8083, or off for requests between relays over NATS only`);
  } else if (peerAddress !== null && /^(0\.0\.0\.0|\[::\]|\[0*(:0*)*\]):/.test(peerAddress)) {
    // It is announced to the other relays as given: they must be able to dial it.
    problems.push(`peerAddress (${ENV.peerAddress}) is announced to the other relays as given: name one address of this machine they reach (not ${peerAddress.slice(0, peerAddress.lastIndexOf(":"))})`);
  }
  return problems;
}

/**
 * Why a NATS server may not be joined as given: beyond loopback with neither credentials nor TLS (null when it
 * may, or when the URL is malformed, which clusterProblems says).
 */
export function openBusProblem(nats: string, credsFile: boolean, ENV: EnvNames): string | null {
  let url: URL;
  try {
    url = new URL(nats);
  } catch {
    return null;
  }
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const loopback = host === "localhost" || host === "::1" || (isIPv4(host) && host.startsWith("127."));
  if (loopback || url.protocol === "tls:" || url.username !== "" || credsFile) return null;
  return `nats (${ENV.nats}) is beyond loopback with neither credentials nor TLS: anyone who reaches ${url.host} would see which machines the relays hold and could flood it. Give credentials (nats://user:password@host:4222, a token as nats://token@host:4222, or natsCreds (${ENV.natsCreds}) for an NKey credentials file), TLS (tls://host:4222), or natsInsecure (${ENV.natsInsecure}) to join it as it is`;
}
