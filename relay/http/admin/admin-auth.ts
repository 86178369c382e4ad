import type { Request, RequestHandler, Response } from "express";
import { MakinaError } from "../../../proto/index.js";
import { Access, type WebSessions } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import { isAdminToken, requestBearer, requestSession, requireCsrf } from "../auth/request-auth.js";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * The two ways into the admin API: the admin bearer token (the operator, every
 * organization), or a web session cookie (one user of one organization), which
 * must also send its CSRF token in `X-CSRF-Token` on every state-changing call.
 * Sets `res.locals.access`.
 */
export function adminAuth(deps: { control: ControlPlane; sessions: WebSessions; adminTokenHash: () => string | undefined }): RequestHandler {
  const findOrg = (ref: string) => deps.control.findOrg(ref);
  return (req, res, next) => {
    const bearer = requestBearer(req);
    if (bearer !== undefined) {
      if (!isAdminToken(bearer, deps.adminTokenHash)) return next(new MakinaError("invalid_admin_token", "Invalid admin token."));
      res.locals.access = new Access({ kind: "operator" }, findOrg);
      return next();
    }
    const session = requestSession(req, deps.sessions);
    if (!session) {
      return next(new MakinaError("invalid_admin_token", "Sign in, or pass the admin token as `Authorization: Bearer <admin token>`."));
    }
    try {
      if (!SAFE_METHODS.has(req.method)) requireCsrf(req, deps.sessions, session);
    } catch (err) {
      return next(err);
    }
    res.locals.access = new Access({ kind: "user", ...session }, findOrg);
    next();
  };
}

/** The caller's access, set by {@link adminAuth}. */
export function accessOf(_req: Request, res: Response): Access {
  return res.locals.access as Access;
}
