import type { Request, Response } from "express";

/** The web session cookie. */
export const SESSION_COOKIE = "makina_session";

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

/** Sets (or, with `maxAgeMs` 0, clears) the session cookie: HttpOnly, SameSite=Strict, and Secure under HTTPS. */
export function setSessionCookie(req: Request, res: Response, value: string, maxAgeMs: number): void {
  const parts = [`${SESSION_COOKIE}=${encodeURIComponent(value)}`, "Path=/", "HttpOnly", "SameSite=Strict", `Max-Age=${Math.max(0, Math.round(maxAgeMs / 1000))}`];
  if (req.secure) parts.push("Secure");
  res.append("set-cookie", parts.join("; "));
}
