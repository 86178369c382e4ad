import { randomBytes } from "node:crypto";
import * as oidc from "openid-client";
import { MakinaError, type Logger } from "../../proto/index.js";
import { hashSecret } from "../keys/index.js";
import { checkedFetch } from "../outbound/checked-fetch.js";
import type { OutboundReach } from "../outbound/checked-lookup.js";
import type { OrgSso, Store } from "../store/index.js";
import type { SecretShelf } from "../vault/index.js";


export interface SingleSignOnDeps {
  store: Store;
  /** Organizations' client secrets (sealed with the relay's secrets key), by organization id. */
  secrets: Pick<SecretShelf, "read">;
  /** Which providers' addresses the relay may reach (`MAKINA_SSO_ALLOW_PRIVATE=1`: private ones and plain http too). */
  reach: OutboundReach;
  log: Logger;
  now?: () => number;
}

/** A provider's configuration read from its discovery document, kept this long. */
const DISCOVERY_TTL_MS = 10 * 60_000;

/** A refusal of a sign-in through a provider: what the person is told, and why it is recorded. */
export class SsoRefusal extends MakinaError {
  /**
   * @param why what the sign-in page says (one of its own sentences: a code, never text from the request)
   * @param reason what the audit log records
   * @param orgId whose sign-in it was, when known
   */
  constructor(
    readonly why: SsoRefusalCode,
    readonly reason: string,
    readonly orgId: string | null,
  ) {
    super("invalid_credentials", `Single sign-on refused: ${reason}`);
  }
}

/** Why a sign-in through a provider was refused, as the sign-in page says it (relay/web's sign-in page has the words). */
export type SsoRefusalCode = "unknown_state" | "another_browser" | "expired" | "not_set_up" | "provider_refused" | "disabled" | "no_login" | "login_taken";

/**
 * Single sign-on with an organization's OpenID provider (authorization code flow with PKCE, `openid-client`):
 * `start` sends the browser to the provider with a fresh `state`, `nonce` and code challenge, kept in the
 * database by the state's hash (any relay finishes it) and tied to the browser by a cookie; `verify` takes the
 * state once, checks the browser, trades the code for tokens and lets `openid-client` verify the ID token (its
 * signature against the provider's keys, issuer, audience, expiry, nonce). Who the person is here, and whether
 * they may sign in, is the control plane's (relay/control/sso-settings.ts).
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
      // The detail (which may say what answers inside a network) for the relay's log; the caller, anyone, is told less.
      this.d.log.warn("an organization's identity provider could not be read", { orgId: sso.orgId, issuer: sso.issuer, error: String(err) });
      throw new MakinaError("runtime_unavailable", "The organization's identity provider could not be reached just now. Try again, or ask an admin.", { retryAfterMs: 5000 });
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
      const why = err instanceof Error ? err.message : String(err);
      this.d.log.info("an issuer could not be read as an OpenID provider", { issuer, error: why });
      // What the admin is told names the kind of failure, not what answered (no probe of the relay's network).
      const said = /not a public address|is not https/.test(why) ? why : "it did not answer with a valid discovery document over TLS";
      throw new MakinaError("invalid_value", `'issuer' could not be read as an OpenID provider (${issuer}/.well-known/openid-configuration): ${said}.`, { param: "issuer" });
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
   * Checks the provider's answer to a sign-in (`query`: the callback's) in the browser that started it
   * (`browser`: its cookie): the state taken once, the browser's cookie, the code traded for tokens, the ID token
   * verified by `openid-client`. Its claims, or an {@link SsoRefusal} saying why.
   */
  async verify(query: URLSearchParams, browser: string | undefined, orgId: string | undefined): Promise<{ sso: OrgSso; claims: oidc.IDToken }> {
    const state = query.get("state") ?? "";
    const flow = state ? await this.d.store.sso.takeFlow(hashSecret(state)) : undefined;
    if (!flow) throw new SsoRefusal("unknown_state", "unknown state", null);
    // Each organization's provider answers at its own address: an answer at another organization's (a provider
    // sending a browser on to another's, the "mix-up" attack) is refused before any code is traded.
    if (flow.orgId !== orgId) throw new SsoRefusal("unknown_state", "answer at another organization's address", flow.orgId);
    if (!browser || hashSecret(browser) !== flow.browserHash) throw new SsoRefusal("another_browser", "another browser", flow.orgId);
    if (this.now() - flow.createdAt > 600_000) throw new SsoRefusal("expired", "expired flow", flow.orgId);
    const sso = await this.d.store.sso.get(flow.orgId);
    if (!sso) throw new SsoRefusal("not_set_up", "not set up", flow.orgId);
    const answer = new URL(flow.redirectUri);
    for (const [k, v] of query) answer.searchParams.append(k, v);
    try {
      const tokens = await oidc.authorizationCodeGrant(await this.configOf(sso), answer, { pkceCodeVerifier: flow.codeVerifier, expectedState: state, expectedNonce: flow.nonce, idTokenExpected: true });
      return { sso, claims: tokens.claims()! };
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      throw new SsoRefusal("provider_refused", `provider answer refused: ${why.slice(0, 300)}`, sso.orgId);
    }
  }
}

/** The role the person's groups give (admins' groups: admin; others: member), or null when roles are not read from the provider. */
export function roleOf(sso: OrgSso, claims: Record<string, unknown>): "admin" | "member" | null {
  if (!sso.roleClaim) return null;
  const value = claims[sso.roleClaim];
  const groups = Array.isArray(value) ? value.map(String) : typeof value === "string" ? [value] : [];
  return groups.some((g) => sso.adminGroups.includes(g)) ? "admin" : "member";
}

/** The login a person made on first sign-in gets: its email, else its user name. */
export function loginOf(claims: Record<string, unknown>): string | null {
  const v = [claims.email, claims.preferred_username].find((c) => typeof c === "string" && c.trim() !== "" && c.length <= 100);
  return v === undefined ? null : String(v).trim();
}
