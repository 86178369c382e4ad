import type { Request } from "express";
import { MakinaError } from "../../../proto/index.js";
import type { SessionUser, WebSessions } from "../../auth/index.js";
import { bearerToken, hashSecret, hashesEqual } from "../../keys/index.js";
import { readCookie, sessionCookieName } from "./cookies.js";

/** The bearer token of a request, if it sent one. */
export function requestBearer(req: Request): string | undefined {
  return bearerToken(req.get("authorization"));
}

/** True when `token` is the relay's admin token (compared by hash, in constant time). */
export function isAdminToken(token: string | undefined, adminTokenHash: () => string | undefined): boolean {
  const stored = adminTokenHash();
  return token !== undefined && stored !== undefined && hashesEqual(stored, hashSecret(token));
}

/** The signed-in user of the request's session cookie, if any. */
export function requestSession(req: Request, sessions: WebSessions): Promise<SessionUser | undefined> {
  return sessions.resolve(readCookie(req, sessionCookieName(req)));
}

/** Throws 403 `invalid_csrf_token` unless the request carries its session's CSRF token. */
export function requireCsrf(req: Request, sessions: WebSessions, session: SessionUser): void {
  if (!sessions.csrfMatches(session, req.get("x-csrf-token"))) {
    throw new MakinaError("invalid_csrf_token", "This request is missing its CSRF token (X-CSRF-Token). Reload the page and try again.");
  }
}
