import { MakinaError } from "../../proto/index.js";
import { userActor, type SessionUser } from "../auth/index.js";
import type { Organization } from "../store/index.js";
import type { ControlContext } from "./control-context.js";

/**
 * Signing in to the web application and out of it, and changing one's own password: the mechanics are the web
 * sessions' (hashes, cookies, throttling); what was tried, and what came of it, goes to the audit log here.
 */
export class SignIns {
  constructor(private readonly c: ControlContext) {}

  /** Opens a session for a login and password, or refuses (the same words for an unknown login and a wrong password). */
  async signIn(login: string, password: string, address: string): Promise<SessionUser & { cookie: string; expiresAt: number }> {
    const result = await this.c.deps.sessions.signIn(login, password, address);
    const user = result.ok ? result.session.user : result.user;
    // An organization that signs in through its provider lets only its break-glass admin use a password (said
    // only to whoever knows the password, as a disabled account is).
    const sso = result.ok ? await this.c.store.sso.get(result.session.user.orgId) : undefined;
    if (result.ok && sso?.passwords === "break_glass" && sso.breakGlassLogin !== result.session.user.login) {
      await this.c.deps.sessions.signOut(result.session);
      await this.c.deps.audit.record({ orgId: sso.orgId, action: "sign_in", outcome: "failure", actor: { kind: "user", id: result.session.user.id, login: result.session.user.login }, address, target: null, detail: { reason: "passwords off: single sign-on only" } });
      throw new MakinaError("invalid_credentials", `Your organization signs in with single sign-on: use "Sign in with ${sso.label}".`, { param: "login" });
    }
    await this.c.deps.audit.record({
      orgId: user?.orgId ?? null,
      action: "sign_in",
      outcome: result.ok ? "success" : "failure",
      actor: user ? { kind: "user", id: user.id, login: user.login } : { kind: "anonymous", id: null, login: login.slice(0, 64) },
      address,
      target: null,
      detail: result.ok ? null : { reason: result.reason },
    });
    if (result.ok) return result.session;
    if (result.reason === "disabled") throw new MakinaError("invalid_credentials", "This account is disabled; ask an admin of your organization.", { param: "login" });
    throw new MakinaError("invalid_credentials", "The login or password is not right.", { param: "password" });
  }

  /** Ends a session. */
  signOut(session: SessionUser): Promise<void> {
    return this.c.deps.sessions.signOut(session);
  }

  /** Changes the signed-in user's own password (the current one checked, throttled as a sign-in is); its other sessions end. */
  async changePassword(session: SessionUser, current: string, next: string, address: string): Promise<void> {
    await this.c.deps.sessions.changePassword(session, current, next, address);
    const { user } = session;
    await this.c.record(userActor(session, address), { orgId: user.orgId, action: "user.password_changed", target: { kind: "user", id: user.id, name: user.login } });
  }

  /** The organization of a session's user. */
  async orgOf(session: SessionUser): Promise<Organization> {
    const org = await this.c.store.orgs.find(session.user.orgId);
    if (!org) throw new MakinaError("not_found", `No organization '${session.user.orgId}'.`, { param: "org" });
    return org;
  }
}
