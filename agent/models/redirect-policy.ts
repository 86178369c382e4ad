import { isIP } from "node:net";
import { addressClass, MakinaError, resolveHost, type AddressClass, type ResolveHost } from "../../proto/index.js";

/** Resolves a host name to its addresses (proto's `ResolveHost`; injectable for tests). */
export type Resolve = ResolveHost;
export { resolveHost };

/** A URL host's addresses: itself when it is one, else what `resolve` answers. */
export async function addressesOf(host: string, resolve: Resolve): Promise<string[]> {
  const bare = host.replace(/^\[|\]$/g, "");
  return isIP(bare) ? [bare] : await resolve(bare);
}

/**
 * Whether a download that started at `origin` may follow a redirect to `target`. A model server (or a hub's
 * CDN) may redirect anywhere on the internet over https, but it cannot steer the agent at this machine, its
 * network or a cloud's metadata service: a redirect to a loopback, link-local, private or reserved address is
 * refused unless the download started at an address of that kind itself (a mirror on the LAN may redirect
 * within the LAN), and a redirect to plain http only when the download itself started over http (a mirror
 * without TLS). Names are resolved here, before the request; throws `invalid_value` saying why, else returns
 * the target's addresses that passed, which the request must then connect to (and to no other).
 * `originAddresses`: the addresses the download's first request connected to (its origin is not resolved
 * again, so a name cannot answer one way for the request and another for this check).
 */
export async function checkRedirect(origin: URL, target: URL, resolve: Resolve = resolveHost, originAddresses?: string[]): Promise<string[]> {
  const refuse = (why: string) => new MakinaError("invalid_value", `The download of ${origin.href} was redirected to ${target.href}, ${why}: refused.`);
  if (target.protocol !== "https:" && !(target.protocol === "http:" && origin.protocol === "http:")) {
    throw refuse(origin.protocol === "https:" ? "which leaves https" : `whose scheme ${target.protocol} is not http(s)`);
  }
  let allowed: Set<AddressClass>;
  let reached: string[];
  try {
    const [from, to] = await Promise.all([originAddresses ?? addressesOf(origin.hostname, resolve), addressesOf(target.hostname, resolve)]);
    allowed = new Set(from.map(addressClass));
    reached = to;
  } catch (err) {
    throw refuse(`whose host cannot be resolved (${(err as Error).message})`);
  }
  if (reached.length === 0) throw refuse("whose host resolves to no address");
  for (const address of reached) {
    const kind = addressClass(address);
    if (kind !== "public" && !allowed.has(kind)) throw refuse(`a ${kind} address`);
  }
  return reached;
}
