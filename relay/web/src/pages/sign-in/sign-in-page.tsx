import { useEffect, useState } from "preact/hooks";
import { ApiError, type AdminClient } from "../../api/admin-client.js";
import type { SessionInfo } from "../../api/types.js";
import { describedBy, Field } from "../../components/field.js";
import { Notice } from "../../components/notice.js";

/**
 * Why a sign-in through an identity provider was refused, as the relay sent the browser back with it: read from
 * the address the document loaded at (then taken out of it), whichever of the sign-in page's mounts asks.
 */
const ssoRefusal = (() => {
  let said: string | null | undefined;
  return (): string | null => {
    if (said === undefined) {
      said = new URLSearchParams(location.search).get("sso_error");
      if (said !== null) history.replaceState(history.state, "", location.pathname);
    }
    return said;
  };
})();

/**
 * Sign in with a login and password (`makina up` prints the first admin's), or through an organization's
 * identity provider: a button for each organization that set one up.
 */
export function SignInPage({ client, onSignedIn, sessionEnded = false }: { client: AdminClient; onSignedIn: (s: SessionInfo) => void; sessionEnded?: boolean }) {
  const ssoError = ssoRefusal();
  const [providers, setProviders] = useState<{ org: string; label: string }[]>([]);
  useEffect(() => {
    fetch("/auth/v1/sso")
      .then((r) => (r.ok ? (r.json() as Promise<{ data: { org: string; label: string }[] }>) : { data: [] }))
      .then((l) => setProviders(l.data), () => undefined);
  }, []);
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
      <form class="card sign-in-card" onSubmit={submit} noValidate>
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
        {ssoError && !error && (
          <Notice tone="error" testId="sso-error">
            {ssoError}
          </Notice>
        )}
        {providers.map((p) => (
          <a key={p.org} class="button secondary wide" href={`/auth/v1/sso/${encodeURIComponent(p.org)}/start`}>
            Sign in with {p.label}
          </a>
        ))}
        {providers.length > 0 && <p class="muted small or">or with a password</p>}
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
  );
}
