import type { Request, RequestHandler, Response } from "express";
import { MakinaError } from "../../../proto/index.js";
import { operatorActor, userActor, type Actor, type WebSessions } from "../../auth/index.js";
import { isAdminToken, requestBearer, requestSession, requireCsrf } from "../auth/request-auth.js";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * The two ways into the admin API: the admin bearer token (the operator, every
 * organization), or a web session cookie (one user of one organization), which
 * must also send its CSRF token in `X-CSRF-Token` on every state-changing call.
 * Sets `res.locals.actor`: who calls, and from where; what it may do is the control plane's to decide.
 */
export function adminAuth(deps: { sessions: WebSessions; adminTokenHash: () => string | undefined }): RequestHandler {
  return (req, res, next) => {
    authorize(req, res).then(next, next);
  };
  async function authorize(req: Request, res: Response): Promise<void> {
    const bearer = requestBearer(req);
    if (bearer !== undefined) {
      if (!isAdminToken(bearer, deps.adminTokenHash)) throw new MakinaError("invalid_admin_token", "Invalid admin token.");
      res.locals.actor = operatorActor(req.ip ?? null);
      return;
    }
    const session = await requestSession(req, deps.sessions);
    if (!session) throw new MakinaError("invalid_admin_token", "Sign in, or pass the admin token as `Authorization: Bearer <admin token>`.");
    if (!SAFE_METHODS.has(req.method)) requireCsrf(req, deps.sessions, session);
    res.locals.actor = userActor(session, req.ip ?? null);
  }
}

/** The caller, set by {@link adminAuth}. */
export function actorOf(_req: Request, res: Response): Actor {
  return res.locals.actor as Actor;
}
