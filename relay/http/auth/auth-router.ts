import { Router, type Request, type Response } from "express";
import { MakinaError } from "../../../proto/index.js";
import type { SessionUser, WebSessions } from "../../auth/index.js";
import type { Store } from "../../store/index.js";
import { jsonBody } from "../json-body.js";
import { setSessionCookie } from "./cookies.js";
import { requestSession, requireCsrf } from "./request-auth.js";

/**
 * Sign-in for the web application (`/auth/v1`): sign in, the current session
 * (with its CSRF token), sign out, change password.
 */
export function authRouter(deps: { store: Store; sessions: WebSessions }): Router {
  const { store, sessions } = deps;
  const r = Router();
  r.use("/auth/v1", ...jsonBody(64 * 1024));

  const view = (s: SessionUser) => {
    const org = store.orgs.find(s.user.orgId);
    return { user: { id: s.user.id, login: s.user.login, role: s.user.role }, org: org && { id: org.id, name: org.name, slug: org.slug }, csrf_token: s.csrfToken };
  };
  const current = (req: Request): SessionUser => {
    const s = requestSession(req, sessions);
    if (!s) throw new MakinaError("invalid_credentials", "You are not signed in.");
    return s;
  };
  const withCsrf = (req: Request): SessionUser => {
    const s = current(req);
    requireCsrf(req, sessions, s);
    return s;
  };
  const handle = (fn: (req: Request, res: Response) => unknown) => (req: Request, res: Response, next: (err?: unknown) => void) => {
    try {
      res.json(fn(req, res));
    } catch (err) {
      next(err);
    }
  };

  r.post(
    "/auth/v1/sign-in",
    handle((req, res) => {
      const b = (req.body ?? {}) as Record<string, unknown>;
      const s = sessions.signIn(b.login, b.password, req.ip ?? "unknown");
      // The browser keeps the cookie exactly as long as the session lasts.
      setSessionCookie(req, res, s.cookie, s.expiresAt - Date.now());
      return view(s);
    }),
  );
  r.get(
    "/auth/v1/session",
    handle((req) => view(current(req))),
  );
  r.post(
    "/auth/v1/sign-out",
    handle((req, res) => {
      sessions.signOut(withCsrf(req));
      setSessionCookie(req, res, "", 0);
      return { signed_out: true };
    }),
  );
  r.post(
    "/auth/v1/password",
    handle((req) => {
      const b = (req.body ?? {}) as Record<string, unknown>;
      sessions.changePassword(withCsrf(req), b.current_password, b.new_password);
      return { changed: true };
    }),
  );
  return r;
}
