import type { LookupFunction } from "node:net";
import { addressClass, answerLookup, resolveHost, type ResolveHost } from "../../proto/index.js";

/** What the relay's own requests to URLs an admin gave (alert webhooks, identity providers) may reach. */
export interface OutboundReach {
  /** Plain `http` and private, loopback and link-local addresses too (an operator's choice, for on-premises servers and tests). */
  allowPrivate: boolean;
  resolve?: ResolveHost;
}

/**
 * A socket lookup that resolves the host and lets the connection go only to public addresses (any, with
 * `allowPrivate`): the check is the lookup the socket itself uses, so a name that resolves elsewhere a moment
 * later (DNS rebinding) changes nothing.
 */
export function checkedLookup(reach: OutboundReach): LookupFunction {
  const resolve = reach.resolve ?? resolveHost;
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (addresses) => {
        const refused = reach.allowPrivate ? undefined : addresses.find((a) => addressClass(a) !== "public");
        if (addresses.length === 0 || refused !== undefined) return callback(new Error(`${hostname} resolves to ${refused ?? "nothing"}, not a public address`), "", 4);
        answerLookup(addresses, options, callback);
      },
      (err: Error) => callback(err, "", 4),
    );
  };
}
