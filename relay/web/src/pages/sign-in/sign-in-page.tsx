import { useEffect, useState } from "preact/hooks";
import { ApiError, type AdminClient } from "../../api/admin-client.js";
import type { SessionInfo } from "../../api/types.js";
import { describedBy, Field } from "../../components/field.js";
import { Notice } from "../../components/notice.js";

/** What the sign-in page says when the relay sends a browser back from a refused single sign-on (by its code). */
const SSO_REFUSALS: Record<string, string> = {
  unknown_state: "This sign-in is unknown or was already used: start again.",
  another_browser: "This sign-in was started in another browser: start again here.",
  expired: "This sign-in took too long: start again.",
  not_set_up: "Single sign-on is not set up for this organization.",
  provider_refused: "The identity provider's answer was refused; nothing was signed in. Try again, or ask an admin.",
  disabled: "This account is disabled; ask an admin of your organization.",
  no_login: "The identity provider gave no email or user name to sign in with.",
  login_taken: "Your email is already someone else's login here: an admin of your organization can sort it out.",
  unavailable: "Single sign-on could not start: the organization's identity provider could not be reached, or the organization is not known. Try again.",
};

/**
 * Why a sign-in through an identity provider was refused, as the relay sent the browser back with it: read from the
 * address the document loaded at, as this module loads (before the application routes), and taken out of it.
 */
const SSO_REFUSAL: string | null = (() => {
  const code = new URLSearchParams(location.search).get("sso_error");
  if (code === null) return null;
  history.replaceState(history.state, "", location.pathname);
  return SSO_REFUSALS[code] ?? SSO_REFUSALS.unavailable!;
})();

/**
 * Sign in with a login and password (`makina up` prints the first admin's), or through an organization's
 * identity provider: a button for each organization that set one up.
 */
export function SignInPage({ client, onSignedIn, sessionEnded = false }: { client: AdminClient; onSignedIn: (s: SessionInfo) => void; sessionEnded?: boolean }) {
  const [providers, setProviders] = useState<{ org: string; label: string }[]>([]);
  const [askOrg, setAskOrg] = useState(false);
  const [org, setOrg] = useState("");
  useEffect(() => {
    fetch("/auth/v1/sso")
      .then((r) => (r.ok ? (r.json() as Promise<{ data: { org: string; label: string }[]; ask_org: boolean }>) : { data: [], ask_org: false }))
      .then((l) => {
        setProviders(l.data);
        setAskOrg(l.ask_org);
      }, () => undefined);
  }, []);
  const [ssoRefused, setSsoRefused] = useState<string | null>(SSO_REFUSAL);
  /** Asks the relay where this organization's provider is, then goes there. */
  const startSso = async (orgSlug: string) => {
    setBusy(true);
    setSsoRefused(null);
    try {
      const res = await fetch(`/auth/v1/sso/${encodeURIComponent(orgSlug)}/start`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      const said = (await res.json()) as { url?: string; sso_error?: string };
      if (said.url) return location.assign(said.url);
      setSsoRefused(SSO_REFUSALS[said.sso_error ?? ""] ?? SSO_REFUSALS.unavailable!);
    } catch {
      setSsoRefused(SSO_REFUSALS.unavailable!);
    }
    setBusy(false);
  };
  const [login, setLogin] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      onSignedIn(await client.signIn(login.trim(), password));
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, null, null, String(err)));
    } finally {
      setBusy(false);
    }
  };
  const loginError = error?.param === "login" ? error.message : null;
  const passwordError = error?.param === "password" ? error.message : null;
  return (
    <div class="sign-in">
      <div class="card sign-in-card">
        <div class="brand large">
          <span class="logo" aria-hidden="true">
            M
          </span>
          <span>Makina</span>
        </div>
        <h1>Sign in</h1>
        <p class="subtitle">Serve models from your own machines through the API your code already speaks.</p>
        {sessionEnded && !error && (
          <Notice tone="info" testId="session-ended">
            You were signed out: your session ended (it expired, you signed out elsewhere, or an admin changed your account: disabled it, changed its role or its password). Sign in again; if you
            cannot, ask an admin of your organization.
          </Notice>
        )}
        {error && !loginError && !passwordError && <Notice tone="error">{error.message}</Notice>}
        {ssoRefused && !error && (
          <Notice tone="error" testId="sso-error">
            {ssoRefused}
          </Notice>
        )}
        {/* Single sign-on starts with a JSON POST of this page (another site cannot start one in your browser). */}
        {providers.map((p) => (
          <button key={p.org} type="button" class="button secondary wide sso" disabled={busy} onClick={() => void startSso(p.org)}>
            Sign in with {p.label}
          </button>
        ))}
        {askOrg && (
          <form class="row sso-org" onSubmit={(e) => (e.preventDefault(), void startSso(org))}>
            <Field id="sso-org" label="Organization" hint="Its short name, for single sign-on.">
              <input id="sso-org" value={org} onInput={(e) => setOrg(e.currentTarget.value.trim())} />
            </Field>
            <button type="submit" class="button secondary" disabled={org === "" || busy}>
              Sign in with single sign-on
            </button>
          </form>
        )}
        {(providers.length > 0 || askOrg) && <p class="muted small or">or with a password</p>}
        <form onSubmit={submit} noValidate>
        <Field id="login" label="Login" error={loginError} hint="On a fresh install, `makina up` prints the admin login and password.">
          <input id="login" name="login" autoComplete="username" value={login} onInput={(e) => setLogin(e.currentTarget.value)} aria-describedby={describedBy("login", loginError)} autoFocus required />
        </Field>
        <Field id="password" label="Password" error={passwordError}>
          <input
            id="password"
            name="password"
            type="password"
            autoComplete="current-password"
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
            aria-describedby={describedBy("password", passwordError)}
            required
          />
        </Field>
        <button type="submit" class="button primary wide" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
        </form>
      </div>
    </div>
  );
}
