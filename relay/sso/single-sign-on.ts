import { randomBytes } from "node:crypto";
import * as oidc from "openid-client";
import { MakinaError, type Logger } from "../../proto/index.js";
import type { AuditLog } from "../audit/index.js";
import type { SessionUser, WebSessions } from "../auth/index.js";
import { hashPassword, hashSecret } from "../keys/index.js";
import { checkedFetch } from "../outbound/checked-fetch.js";
import type { OutboundReach } from "../outbound/checked-lookup.js";
import type { OrgSso, Store, User } from "../store/index.js";

/** Where organizations' client secrets are kept (sealed with the relay's secrets key). */
export interface SsoSecrets {
  read(orgId: string): Promise<string | undefined>;
}

export interface SingleSignOnDeps {
  store: Store;
  secrets: SsoSecrets;
  sessions: WebSessions;
  audit: AuditLog;
  /** Which providers' addresses the relay may reach (`MAKINA_SSO_ALLOW_PRIVATE=1`: private ones and plain http too). */
  reach: OutboundReach;
  /** How long a session opened through a provider lasts at most (so that offboarding there ends access here). */
  sessionTtlMs: number;
  log: Logger;
  now?: () => number;
}

/** A provider's configuration read from its discovery document, kept this long. */
const DISCOVERY_TTL_MS = 10 * 60_000;

/** A refusal of a sign-in through a provider: what the person is told, and why it is recorded. */
export class SsoRefusal extends MakinaError {
  constructor(
    message: string,
    readonly reason: string,
    readonly orgId: string | null,
  ) {
    super("invalid_credentials", message);
  }
}

/**
 * Single sign-on with an organization's OpenID provider (authorization code flow with PKCE, `openid-client`):
 * `start` sends the browser to the provider with a fresh `state`, `nonce` and code challenge, kept in the
 * database by the state's hash (any relay finishes it) and tied to the browser by a cookie; `finish` takes the
 * state once, checks the browser, trades the code for tokens and lets `openid-client` verify the ID token (its
 * signature against the provider's keys, issuer, audience, expiry, nonce). The person is found by the provider's
 * subject, or made a member (an admin when a group of `roleClaim` is an admin group) on first sign-in; a person
 * disabled here stays out.
 */
export class SingleSignOn {
  private readonly configs = new Map<string, { config: oidc.Configuration; key: string; at: number }>();
  private readonly now: () => number;

  constructor(private readonly d: SingleSignOnDeps) {
    this.now = d.now ?? Date.now;
  }

  /** The provider's configuration (discovery from its issuer), read again when the settings changed or after 10 minutes. */
  private async configOf(sso: OrgSso): Promise<oidc.Configuration> {
    const key = `${sso.issuer}\u0000${sso.clientId}\u0000${sso.updatedAt}`;
    const held = this.configs.get(sso.orgId);
    if (held && held.key === key && this.now() - held.at < DISCOVERY_TTL_MS) return held.config;
    const secret = await this.d.secrets.read(sso.orgId);
    if (secret === undefined) throw new MakinaError("not_found", "This organization's single sign-on has no client secret: an admin sets it again.");
    const execute = [oidc.enableNonRepudiationChecks, ...(this.d.reach.allowPrivate ? [oidc.allowInsecureRequests] : [])];
    let config: oidc.Configuration;
    try {
      config = await oidc.discovery(new URL(sso.issuer), sso.clientId, undefined, oidc.ClientSecretBasic(secret), { [oidc.customFetch]: checkedFetch(this.d.reach) as oidc.CustomFetch, execute });
    } catch (err) {
      throw new MakinaError("runtime_unavailable", `The identity provider ${sso.issuer} could not be read: ${err instanceof Error ? err.message : String(err)}.`, { retryAfterMs: 5000 });
    }
    this.configs.set(sso.orgId, { config, key, at: this.now() });
    return config;
  }

  /** Reads an issuer's discovery document (before its settings are saved): throws, saying why, when it cannot. */
  async discover(issuer: string, clientId: string): Promise<void> {
    const execute = this.d.reach.allowPrivate ? [oidc.allowInsecureRequests] : [];
    try {
      await oidc.discovery(new URL(issuer), clientId, undefined, undefined, { [oidc.customFetch]: checkedFetch(this.d.reach) as oidc.CustomFetch, execute });
    } catch (err) {
      throw new MakinaError("invalid_value", `'issuer' could not be read as an OpenID provider (${issuer}/.well-known/openid-configuration): ${err instanceof Error ? err.message : String(err)}.`, { param: "issuer" });
    }
  }

  /** Forgets a provider's configuration (its settings changed). */
  forget(orgId: string): void {
    this.configs.delete(orgId);
  }

  /** Where the browser goes to sign in with the organization's provider, and the cookie that ties the flow to it. */
  async start(sso: OrgSso, redirectUri: string): Promise<{ url: string; browser: string }> {
    const config = await this.configOf(sso);
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const browser = randomBytes(32).toString("base64url");
    await this.d.store.sso.startFlow(hashSecret(state), { orgId: sso.orgId, browserHash: hashSecret(browser), codeVerifier, nonce, redirectUri, createdAt: this.now() });
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: "openid email profile",
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: "S256",
      state,
      nonce,
    });
    return { url: url.href, browser };
  }

  /**
   * Finishes a sign-in from the provider's answer (`query`: the callback's), in the browser that started it
   * (`browser`: its cookie): a session, or an {@link SsoRefusal}, recorded either way.
   */
  async finish(query: URLSearchParams, browser: string | undefined, address: string): Promise<SessionUser & { cookie: string; expiresAt: number }> {
    const state = query.get("state") ?? "";
    const flow = state ? await this.d.store.sso.takeFlow(hashSecret(state)) : undefined;
    if (!flow) return this.refuse("This sign-in is unknown or was already used: start again from the sign-in page.", "unknown state", null, address);
    if (!browser || hashSecret(browser) !== flow.browserHash) return this.refuse("This sign-in was started in another browser: start again from the sign-in page.", "another browser", flow.orgId, address);
    if (this.now() - flow.createdAt > 600_000) return this.refuse("This sign-in took too long: start again from the sign-in page.", "expired flow", flow.orgId, address);
    const sso = await this.d.store.sso.get(flow.orgId);
    if (!sso) return this.refuse("Single sign-on is no longer set up for this organization.", "not set up", flow.orgId, address);
    const answer = new URL(flow.redirectUri);
    for (const [k, v] of query) answer.searchParams.append(k, v);
    let claims: oidc.IDToken;
    try {
      const tokens = await oidc.authorizationCodeGrant(await this.configOf(sso), answer, { pkceCodeVerifier: flow.codeVerifier, expectedState: state, expectedNonce: flow.nonce, idTokenExpected: true });
      claims = tokens.claims()!;
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      return this.refuse("The identity provider's answer was refused; nothing was signed in. Try again, or ask an admin.", `provider answer refused: ${why.slice(0, 300)}`, sso.orgId, address);
    }
    const user = await this.person(sso, claims, address);
    if (user.disabledAt !== null) return this.refuse("This account is disabled; ask an admin of your organization.", "disabled", sso.orgId, address, user);
    const session = await this.d.sessions.open(user, this.d.sessionTtlMs);
    await this.d.audit.record({ orgId: sso.orgId, action: "sso.sign_in", outcome: "success", actor: { kind: "user", id: user.id, login: user.login }, address, target: null, detail: { issuer: sso.issuer, subject: claims.sub } });
    return session;
  }

  /** The person the ID token names: found by subject (its role kept in step with its groups), or made now. */
  private async person(sso: OrgSso, claims: oidc.IDToken, address: string): Promise<User> {
    const role = roleOf(sso, claims);
    const existing = await this.d.store.sso.userIdOf(sso.orgId, claims.sub);
    if (existing) {
      const user = (await this.d.store.users.get(existing))!;
      if (role && user.role !== role && user.disabledAt === null) {
        // The last admin stays one (an organization keeps an enabled admin), whatever the provider's groups say.
        const changed = await this.d.store.users.update(user.id, { role }, { keepAnAdmin: true });
        if (changed === "last_admin" || changed === undefined) return user;
        await this.d.sessions.endUser(user.id);
        await this.d.audit.record({ orgId: sso.orgId, action: "user.role_changed", outcome: "success", actor: { kind: "user", id: user.id, login: user.login }, address, target: { kind: "user", id: user.id, name: user.login }, detail: { role, by: "identity provider groups" } });
        return { ...user, role };
      }
      return user;
    }
    const login = loginOf(claims);
    if (!login) return this.refuse("The identity provider gave no email or user name to sign in with.", "no login claim", sso.orgId, address);
    const made = await this.d.store.users.create({ orgId: sso.orgId, login, passwordHash: await hashPassword(randomBytes(32).toString("base64url")), role: role ?? "member" });
    if (!made) return this.refuse(`The login ${login} is already someone else's here: an admin of your organization can sort it out.`, "login taken", sso.orgId, address);
    await this.d.store.sso.setSubject(made.id, claims.sub);
    await this.d.audit.record({ orgId: sso.orgId, action: "sso.user_created", outcome: "success", actor: { kind: "user", id: made.id, login: made.login }, address, target: { kind: "user", id: made.id, name: made.login }, detail: { issuer: sso.issuer, subject: claims.sub, role: made.role } });
    return made;
  }

  private async refuse(message: string, reason: string, orgId: string | null, address: string, user?: User): Promise<never> {
    await this.d.audit.record({ orgId, action: "sso.sign_in", outcome: "failure", actor: user ? { kind: "user", id: user.id, login: user.login } : { kind: "anonymous", id: null, login: null }, address, target: null, detail: { reason } });
    throw new SsoRefusal(message, reason, orgId);
  }
}

/** The role the person's groups give (admins' groups: admin; others: member), or null when roles are not read from the provider. */
function roleOf(sso: OrgSso, claims: oidc.IDToken): "admin" | "member" | null {
  if (!sso.roleClaim) return null;
  const value = claims[sso.roleClaim];
  const groups = Array.isArray(value) ? value.map(String) : typeof value === "string" ? [value] : [];
  return groups.some((g) => sso.adminGroups.includes(g)) ? "admin" : "member";
}

/** The login a person made on first sign-in gets: its email, else its user name. */
function loginOf(claims: oidc.IDToken): string | null {
  const v = [claims.email, claims.preferred_username].find((c) => typeof c === "string" && c.trim() !== "" && c.length <= 100);
  return v === undefined ? null : String(v).trim();
}
