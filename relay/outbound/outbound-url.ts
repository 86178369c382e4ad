import { isIP } from "node:net";
import { addressClass } from "../../proto/index.js";
import type { OutboundReach } from "./checked-lookup.js";

/** What an admin's URL is for, as the refusal says it. */
export interface OutboundUrlKind {
  /** An example of a good one: "https://hooks.example.com/makina". */
  example: string;
  /** The setting that lifts the address and scheme checks: "MAKINA_ALERTS_ALLOW_PRIVATE". */
  setting: string;
  /** Its query and fragment are refused too (an identity provider's issuer is a bare URL). */
  bare?: boolean;
}

/**
 * Why a URL an admin gave (a webhook, an issuer) cannot be called, or null when it can, as far as can be told
 * before its host is resolved (the connection's own lookup checks the rest: {@link checkedLookup}): absolute,
 * `https` (plain `http` too with `allowPrivate`), no credentials, and an address written in it public.
 */
export function outboundUrlProblem(text: string, reach: OutboundReach, kind: OutboundUrlKind): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `must be an absolute URL, such as ${kind.example}`;
  }
  if (url.protocol !== "https:" && !(reach.allowPrivate && url.protocol === "http:")) return `must be an https URL (plain http only where the operator allows private addresses: ${kind.setting}=1)`;
  if (url.username || url.password) return "must not hold a user name or password";
  if (kind.bare && (url.search || url.hash)) return "must be the bare URL: no query or fragment";
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host) && !reach.allowPrivate && addressClass(host) !== "public") return `names ${host}, which is not a public address (the operator may allow private addresses: ${kind.setting}=1)`;
  return null;
}
