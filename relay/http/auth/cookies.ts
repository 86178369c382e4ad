import type { Request, Response } from "express";

/** The web session cookie. */
export const SESSION_COOKIE = "makina_session";

/**
 * The session cookie's name for this request: under HTTPS with the `__Host-` prefix, which browsers accept only
 * from a secure origin, for this host alone (no Domain) and the whole path: no other site or subdomain can set
 * or shadow it. Plain HTTP (loopback, development) keeps the bare name.
 */
export function sessionCookieName(req: Request): string {
  return req.secure ? `__Host-${SESSION_COOKIE}` : SESSION_COOKIE;
}

/** One cookie's value from the request's Cookie header, or undefined. */
export function readCookie(req: Request, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const i = part.indexOf("=");
    if (i < 0) continue;
    if (part.slice(0, i).trim() === name) {
      try {
        return decodeURIComponent(part.slice(i + 1).trim());
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** The cookie that ties a sign-in through a provider to the browser that began it. */
export const SSO_FLOW_COOKIE = "makina_sso_flow";

/**
 * Sets (or clears) the single sign-on flow's cookie: HttpOnly, for the callback's path only, and SameSite=Lax,
 * since the provider's page sends the browser back (a navigation from another site, which Strict would strip).
 */
export function setFlowCookie(req: Request, res: Response, value: string, maxAgeMs: number, orgSlug: string): void {
  const parts = [`${SSO_FLOW_COOKIE}=${encodeURIComponent(value)}`, `Path=/auth/v1/sso/${encodeURIComponent(orgSlug)}/callback`, "HttpOnly", "SameSite=Lax", `Max-Age=${Math.max(0, Math.round(maxAgeMs / 1000))}`];
  if (req.secure) parts.push("Secure");
  res.append("set-cookie", parts.join("; "));
}

/** Sets (or, with `maxAgeMs` 0, clears) the session cookie: HttpOnly, SameSite=Strict, and Secure (and `__Host-`) under HTTPS. */
export function setSessionCookie(req: Request, res: Response, value: string, maxAgeMs: number): void {
  const parts = [`${sessionCookieName(req)}=${encodeURIComponent(value)}`, "Path=/", "HttpOnly", "SameSite=Strict", `Max-Age=${Math.max(0, Math.round(maxAgeMs / 1000))}`];
  if (req.secure) parts.push("Secure");
  res.append("set-cookie", parts.join("; "));
  // A session cookie of the bare name, from before the relay served HTTPS, is cleared: it is no longer read.
  if (req.secure && readCookie(req, SESSION_COOKIE) !== undefined) res.append("set-cookie", `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0; Secure`);
}
