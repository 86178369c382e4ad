import { Router, type Request, type Response } from "express";
import { MakinaError } from "../../../proto/index.js";
import type { SessionInfo, SessionRoute } from "../../admin-contract/index.js";
import type { SessionUser, WebSessions } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import { jsonBody } from "../json-body.js";
import { mountRoutes, type RouteHandlers } from "../admin/mount-routes.js";
import { readCookie, setFlowCookie, setSessionCookie, SSO_FLOW_COOKIE } from "./cookies.js";
import { SsoRefusal } from "../../sso/single-sign-on.js";
import { requestSession, requireCsrf } from "./request-auth.js";

/** What a sign-in handler reads and writes besides its body: the cookie. */
interface HttpExchange {
  req: Request;
  res: Response;
}

/**
 * Sign-in for the web application (`/auth/v1`): sign in, the current session
 * (with its CSRF token), sign out, change password.
 */
export function authRouter(deps: { control: ControlPlane; sessions: WebSessions }): Router {
  const { control, sessions } = deps;
  const r = Router();
  // Single sign-on (before the JSON body parser: its start is a form's POST): the browser goes to the provider and
  // comes back here; a refusal goes back to the sign-in page with a code the page says in its own words (never text
  // from the request).
  const toSignIn = (res: Response, err: unknown) => res.redirect(303, `/?sso_error=${err instanceof SsoRefusal ? err.why : "unavailable"}`);
  // Begun by the relay's own sign-in page: a JSON POST (which another site cannot send without the relay's leave) from
  // this origin, answered with where to go (the page then goes there: a form's redirect to the provider would be
  // another origin than the page's form-action allows).
  r.post("/auth/v1/sso/:org/start", (req, res) => {
    if (!sameOrigin(req) || !req.is("application/json")) return void res.status(403).json({ sso_error: "unavailable" });
    control.sso.start(String(req.params.org)).then(({ url, browser }) => {
      setFlowCookie(req, res, browser, 600_000, String(req.params.org));
      res.set("cache-control", "no-store").json({ url });
    }, (err: unknown) => res.status(err instanceof SsoRefusal ? 400 : 503).json({ sso_error: err instanceof SsoRefusal ? err.why : "unavailable" }));
  });
  r.get("/auth/v1/sso/:org/callback", (req, res) => {
    const org = String(req.params.org);
    const query = new URLSearchParams(req.originalUrl.slice(req.originalUrl.indexOf("?") + 1));
    control.sso.finish(org, query, readCookie(req, SSO_FLOW_COOKIE), req.ip ?? "unknown").then((s) => {
      setFlowCookie(req, res, "", 0, org);
      setSessionCookie(req, res, s.cookie, s.expiresAt - Date.now());
      res.redirect(303, "/");
    }, (err: unknown) => {
      setFlowCookie(req, res, "", 0, org);
      toSignIn(res, err);
    });
  });
  r.use("/auth/v1", ...jsonBody(64 * 1024));

  const view = async (s: SessionUser): Promise<SessionInfo> => {
    const org = await control.signIns.orgOf(s);
    return { user: { id: s.user.id, login: s.user.login, role: s.user.role }, org: { id: org.id, name: org.name, slug: org.slug }, csrf_token: s.csrfToken };
  };
  const current = async (req: Request): Promise<SessionUser> => {
    const s = await requestSession(req, sessions);
    if (!s) throw new MakinaError("invalid_credentials", "You are not signed in.");
    return s;
  };
  const withCsrf = async (req: Request): Promise<SessionUser> => {
    const s = await current(req);
    requireCsrf(req, sessions, s);
    return s;
  };

  const handlers: RouteHandlers<SessionRoute, HttpExchange> = {
    "POST /auth/v1/sign-in": async (input, { req, res }) => {
      const { login, password } = input.body();
      const s = await control.signIns.signIn(login, password, req.ip ?? "unknown");
      // The browser keeps the cookie exactly as long as the session lasts.
      setSessionCookie(req, res, s.cookie, s.expiresAt - Date.now());
      return view(s);
    },
    "GET /auth/v1/session": async (_input, { req }) => view(await current(req)),
    "GET /auth/v1/sso": async () => {
      const { buttons, askOrg } = await control.sso.buttons();
      return { object: "list" as const, data: buttons, ask_org: askOrg };
    },
    "POST /auth/v1/sign-out": async (_input, { req, res }) => {
      await control.signIns.signOut(await withCsrf(req));
      setSessionCookie(req, res, "", 0);
      return { signed_out: true };
    },
    "POST /auth/v1/password": async (input, { req }) => {
      const session = await withCsrf(req);
      const body = input.body();
      await control.signIns.changePassword(session, body.current_password, body.new_password, req.ip ?? "unknown");
      return { changed: true };
    },
  };
  mountRoutes(r, "/auth/v1/", handlers, (req, res) => ({ req, res }));
  return r;
}

/** Whether a request comes from this relay's own pages: its Origin is this host's, or the browser says same-origin. */
function sameOrigin(req: Request): boolean {
  // A page whose referrer policy is no-referrer (the web application's) sends `Origin: null` with its forms'
  // POSTs; the browser's Sec-Fetch-Site says where it came from then.
  const origin = req.get("origin");
  if (origin !== undefined && origin !== "null") return origin === `${req.protocol}://${req.get("host")}`;
  return req.get("sec-fetch-site") === "same-origin";
}
