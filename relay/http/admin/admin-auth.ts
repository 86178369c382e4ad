import type { Request, RequestHandler, Response } from "express";
import { MakinaError } from "../../../proto/index.js";
import { Access, type WebSessions } from "../../auth/index.js";
import { hashSecret, hashesEqual } from "../../keys/index.js";
import type { Store } from "../../store/index.js";
import { SESSION_COOKIE, readCookie } from "../auth/cookies.js";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * The two ways into the admin API: the admin bearer token (the operator, every
 * organization), or a web session cookie (one user of one organization), which
 * must also send its CSRF token in `X-CSRF-Token` on every state-changing call.
 * Sets `res.locals.access`.
 */
export function adminAuth(deps: { store: Store; sessions: WebSessions; adminTokenHash: () => string | undefined }): RequestHandler {
  return (req, res, next) => {
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(req.get("authorization") ?? "")?.[1];
    if (bearer !== undefined) {
      const stored = deps.adminTokenHash();
      if (!stored || !hashesEqual(stored, hashSecret(bearer))) return next(new MakinaError("invalid_admin_token", "Invalid admin token."));
      res.locals.access = new Access({ kind: "operator" }, deps.store);
      return next();
    }
    const session = deps.sessions.resolve(readCookie(req, SESSION_COOKIE));
    if (!session) {
      return next(new MakinaError("invalid_admin_token", "Sign in, or pass the admin token as `Authorization: Bearer <admin token>`."));
    }
    if (!SAFE_METHODS.has(req.method) && !deps.sessions.csrfMatches(session, req.get("x-csrf-token"))) {
      return next(new MakinaError("invalid_csrf_token", "This request is missing its CSRF token (X-CSRF-Token). Reload the page and try again."));
    }
    res.locals.access = new Access({ kind: "user", ...session }, deps.store);
    next();
  };
}

/** The caller's access, set by {@link adminAuth}. */
export function accessOf(_req: Request, res: Response): Access {
  return res.locals.access as Access;
}
