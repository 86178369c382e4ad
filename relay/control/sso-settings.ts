import { MakinaError } from "../../proto/index.js";
import type { Actor } from "../auth/index.js";
import type { OutboundReach } from "../outbound/checked-lookup.js";
import { outboundUrlProblem } from "../outbound/outbound-url.js";
import type { SecretShelf } from "../vault/index.js";
import { randomBytes } from "node:crypto";
import type { SessionUser } from "../auth/index.js";
import { hashPassword } from "../keys/index.js";
import { loginOf, roleOf, SsoRefusal, type SingleSignOn } from "../sso/single-sign-on.js";
import type { OrgSso, User } from "../store/index.js";
import { given, type ControlContext, type Given } from "./control-context.js";

/** What the control plane signs people in through providers with (absent: a relay without single sign-on). */
export interface SsoDeps {
  signOn: SingleSignOn;
  /** How long a session opened through a provider lasts at most (so that offboarding there ends access here soon). */
  sessionTtlMs: number;
  /** Organizations' client secrets, by organization id. */
  secrets: Pick<SecretShelf, "set" | "read" | "forget">;
  reach: OutboundReach;
}

/** What an admin sets: the provider, and who may still use a password. The client secret only when it changes. */
export interface SsoInput {
  issuer: string;
  clientId: string;
  clientSecret?: string;
  label: string;
  roleClaim: string | null;
  adminGroups: string[];
  passwords: OrgSso["passwords"];
  breakGlassLogin: string | null;
}

/** An organization's single sign-on as admins see it: never its client secret. */
export type SsoView = Omit<OrgSso, "updatedAt"> & { hasSecret: boolean; updatedAt: number; redirectUri: string };

/** An organization's single sign-on: its admins set, read and remove it. */
export class SsoSettings {
  constructor(private readonly c: ControlContext) {}

  private deps(): SsoDeps {
    const s = this.c.deps.sso;
    if (!s) throw new MakinaError("unsupported_endpoint", "This relay has no single sign-on.");
    return s;
  }

  /**
   * Where an organization's provider sends people back (to register there): the relay's public URL's
   * `/auth/v1/sso/{org}/callback`, one per organization, so that an answer cannot be taken for another's.
   */
  redirectUri(orgSlug: string): string {
    return `${this.c.deps.link().relayUrl.replace(/\/+$/, "")}/auth/v1/sso/${encodeURIComponent(orgSlug)}/callback`;
  }

  /**
   * What the sign-in page offers (anyone reads it): the button of the one organization with single sign-on; with
   * several, none (`askOrg`: the page asks which organization, so no tenant's label stands on everyone's page).
   */
  async buttons(): Promise<{ buttons: { org: string; label: string }[]; askOrg: boolean }> {
    const all = await this.c.store.sso.list();
    if (all.length !== 1) return { buttons: [], askOrg: all.length > 1 };
    const org = this.c.deps.findOrg(all[0]!.orgId);
    return { buttons: org ? [{ org: org.slug, label: all[0]!.label }] : [], askOrg: false };
  }

  /** Begins a sign-in through an organization's provider: where the browser goes, and the cookie that ties it to the flow. */
  async start(orgSlug: string): Promise<{ url: string; browser: string }> {
    const org = this.c.deps.findOrg(orgSlug);
    const sso = org && (await this.c.store.sso.get(org.id));
    if (!sso) throw new MakinaError("not_found", `No single sign-on for '${orgSlug}'.`, { param: "org" });
    return this.deps().signOn.start(sso, this.redirectUri(org.slug));
  }

  /**
   * Finishes a sign-in through a provider: the answer verified ({@link SingleSignOn.verify}), the person found by
   * the provider's subject (its role kept in step with its groups) or made a member (an admin from an admin group)
   * on first sign-in; a person disabled here stays out. A session, lasting `sessionTtlMs` at most; every sign-in,
   * refusal and person made recorded.
   */
  async finish(orgSlug: string, query: URLSearchParams, browser: string | undefined, address: string): Promise<SessionUser & { cookie: string; expiresAt: number }> {
    const deps = this.deps();
    let verified: Awaited<ReturnType<SingleSignOn["verify"]>>;
    try {
      verified = await deps.signOn.verify(query, browser, this.c.deps.findOrg(orgSlug)?.id);
    } catch (err) {
      if (err instanceof SsoRefusal) await this.refused(err.orgId, err.reason, address);
      throw err;
    }
    const { sso, claims } = verified;
    const user = await this.person(sso, claims, address);
    if (user.disabledAt !== null) {
      await this.refused(sso.orgId, "disabled", address, user);
      throw new SsoRefusal("disabled", "disabled", sso.orgId);
    }
    const session = await this.c.deps.sessions.open(user, deps.sessionTtlMs);
    await this.c.deps.audit.record({ orgId: sso.orgId, action: "sso.sign_in", outcome: "success", actor: { kind: "user", id: user.id, login: user.login }, address, target: null, detail: { issuer: sso.issuer, subject: claims.sub } });
    return session;
  }

  /** The person the ID token names: found by subject (its role kept in step with its groups), or made now. */
  private async person(sso: OrgSso, claims: { sub: string; [claim: string]: unknown }, address: string): Promise<User> {
    const role = roleOf(sso, claims);
    // A subject is its provider's: the same `sub` from another issuer (the organization changed providers) is someone else.
    const subject = `${sso.issuer} ${claims.sub}`;
    const existing = await this.c.store.sso.userIdOf(sso.orgId, subject);
    if (existing) {
      const user = (await this.c.store.users.get(existing))!;
      if (!role || user.role === role || user.disabledAt !== null) return user;
      // The last admin stays one (an organization keeps an enabled admin), whatever the provider's groups say.
      const changed = await this.c.store.users.update(user.id, { role }, { keepAnAdmin: true });
      if (changed === "last_admin" || changed === undefined) return user;
      await this.c.deps.sessions.endUser(user.id);
      await this.c.deps.audit.record({ orgId: sso.orgId, action: "user.role_changed", outcome: "success", actor: { kind: "user", id: user.id, login: user.login }, address, target: { kind: "user", id: user.id, name: user.login }, detail: { role, by: "identity provider groups" } });
      return changed;
    }
    const login = loginOf(claims);
    if (!login) {
      await this.refused(sso.orgId, "no login claim", address);
      throw new SsoRefusal("no_login", "no login claim", sso.orgId);
    }
    const made = await this.c.store.users.create({ orgId: sso.orgId, login, passwordHash: await hashPassword(randomBytes(32).toString("base64url")), role: role ?? "member" });
    if (!made) {
      await this.refused(sso.orgId, "login taken", address);
      throw new SsoRefusal("login_taken", "login taken", sso.orgId);
    }
    await this.c.store.sso.setSubject(made.id, subject);
    await this.c.deps.audit.record({ orgId: sso.orgId, action: "sso.user_created", outcome: "success", actor: { kind: "user", id: made.id, login: made.login }, address, target: { kind: "user", id: made.id, name: made.login }, detail: { issuer: sso.issuer, subject: claims.sub, role: made.role } });
    return made;
  }

  private refused(orgId: string | null, reason: string, address: string, user?: User): Promise<void> {
    return this.c.deps.audit.record({ orgId, action: "sso.sign_in", outcome: "failure", actor: user ? { kind: "user", id: user.id, login: user.login } : { kind: "anonymous", id: null, login: null }, address, target: null, detail: { reason } });
  }

  async get(actor: Actor, orgRef: string): Promise<SsoView | null> {
    const policy = this.c.policy(actor);
    policy.requireAdmin("read the organization's single sign-on");
    const org = policy.org(orgRef);
    const sso = await this.c.store.sso.get(org.id);
    return sso ? { ...sso, hasSecret: (await this.deps().secrets.read(sso.orgId)) !== undefined, redirectUri: this.redirectUri(org.slug) } : null;
  }

  /**
   * Sets the organization's provider, after reading its discovery document with these settings (so a wrong
   * issuer or secret-less first setting is said now, not at someone's sign-in).
   */
  async set(actor: Actor, orgRef: string, asked: Given<SsoInput>): Promise<SsoView> {
    const policy = this.c.policy(actor);
    policy.requireAdmin("set the organization's single sign-on");
    const org = policy.org(orgRef);
    const input = given(asked);
    const deps = this.deps();
    const issuer = outboundUrlProblem(input.issuer, deps.reach, { example: "https://login.example.com/realms/acme", setting: "MAKINA_SSO_ALLOW_PRIVATE", bare: true });
    if (issuer) throw new MakinaError("invalid_value", `'issuer' ${issuer}.`, { param: "issuer" });
    await deps.signOn.discover(input.issuer.replace(/\/+$/, ""), input.clientId);
    const had = await this.c.store.sso.get(org.id);
    // The kept secret goes only to the provider and client it was given for: a new issuer or client id needs its own.
    const sameClient = had !== undefined && had.issuer === input.issuer.replace(/\/+$/, "") && had.clientId === input.clientId;
    if (input.clientSecret === undefined && (!sameClient || (await deps.secrets.read(org.id)) === undefined)) {
      throw new MakinaError("missing_required_parameter", "Missing required parameter: 'client_secret' (the provider's secret for this client; it is kept sealed and never shown again).", { param: "client_secret" });
    }
    if (input.passwords === "break_glass") {
      const admin = input.breakGlassLogin ? await this.c.store.users.findByLogin(input.breakGlassLogin) : undefined;
      if (!admin || admin.orgId !== org.id || admin.role !== "admin" || admin.disabledAt !== null) {
        throw new MakinaError("invalid_value", "'break_glass_login' must be the login of an enabled admin of this organization: the one person who may still sign in with a password when the provider is down.", { param: "break_glass_login" });
      }
    }
    const sso: OrgSso = { orgId: org.id, issuer: input.issuer.replace(/\/+$/, ""), clientId: input.clientId, label: input.label, roleClaim: input.roleClaim, adminGroups: input.adminGroups, passwords: input.passwords, breakGlassLogin: input.passwords === "break_glass" ? input.breakGlassLogin : null, updatedAt: Date.now() };
    if (input.clientSecret !== undefined) await deps.secrets.set(org.id, input.clientSecret);
    await this.c.store.sso.put(sso);
    deps.signOn.forget(org.id);
    await this.c.record(actor, {
      orgId: org.id,
      action: "sso.configured",
      target: { kind: "org", id: org.id, name: org.name },
      detail: { issuer: sso.issuer, client_id: sso.clientId, role_claim: sso.roleClaim, admin_groups: sso.adminGroups, passwords: sso.passwords, break_glass_login: sso.breakGlassLogin, client_secret_changed: input.clientSecret !== undefined, first: had === undefined },
    });
    return { ...sso, hasSecret: true, redirectUri: this.redirectUri(org.slug) };
  }

  async remove(actor: Actor, orgRef: string): Promise<void> {
    const policy = this.c.policy(actor);
    policy.requireAdmin("remove the organization's single sign-on");
    const org = policy.org(orgRef);
    await this.c.store.sso.delete(org.id);
    await this.deps().secrets.forget(org.id);
    this.deps().signOn.forget(org.id);
    await this.c.record(actor, { orgId: org.id, action: "sso.removed", target: { kind: "org", id: org.id, name: org.name } });
  }
}
