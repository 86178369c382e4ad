import { useState } from "preact/hooks";
import type { ApiError } from "../../api/admin-client.js";
import { useLive } from "../../api/use-live.js";
import { useApp } from "../../app-context.js";
import { CopyBlock } from "../../components/copy-button.js";
import { describedBy, Field } from "../../components/field.js";
import { FormActions } from "../../components/form-actions.js";
import { Notice } from "../../components/notice.js";

/**
 * The organization's single sign-on (admins): its OpenID provider, the groups that make admins, and whether
 * passwords still sign in. The client secret is sent when it changes and never shown.
 */
export function SsoSettings() {
  const { client, session, notify } = useApp();
  const sso = useLive(() => client.call("GET /admin/v1/orgs/:org/sso", { params: { org: session.org.id } }), [], []);
  const [editing, setEditing] = useState(false);
  const [f, setF] = useState({ issuer: "", clientId: "", secret: "", label: "", roleClaim: "", adminGroups: "", passwords: "everyone", breakGlass: "" });
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const now = sso.data;
  const open = () => {
    setF({ issuer: now?.issuer ?? "", clientId: now?.client_id ?? "", secret: "", label: now?.label ?? "", roleClaim: now?.role_claim ?? "", adminGroups: now?.admin_groups.join(", ") ?? "", passwords: now?.passwords ?? "everyone", breakGlass: now?.break_glass_login ?? "" });
    setError(null);
    setEditing(true);
  };
  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await client.call("PUT /admin/v1/orgs/:org/sso", {
        params: { org: session.org.id },
        body: {
          issuer: f.issuer.trim(),
          client_id: f.clientId.trim(),
          client_secret: f.secret === "" ? undefined : f.secret,
          label: f.label.trim(),
          role_claim: f.roleClaim.trim() || null,
          admin_groups: f.adminGroups.split(",").map((g) => g.trim()).filter(Boolean),
          passwords: f.passwords as "everyone" | "break_glass",
          break_glass_login: f.breakGlass.trim() || null,
        },
      });
      setEditing(false);
      notify("Single sign-on saved: the sign-in page offers it now.");
      sso.reload();
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };
  const err = (param: string) => (error?.param === param ? error.message : null);
  const input = (id: string, label: string, key: keyof typeof f, hint?: string, type = "text") => (
    <Field id={id} label={label} hint={hint} error={err(PARAMS[key])}>
      <input id={id} type={type} value={f[key]} autoComplete="off" onInput={(e) => setF({ ...f, [key]: e.currentTarget.value })} aria-describedby={describedBy(id, err(PARAMS[key]))} />
    </Field>
  );
  return (
    <section class={editing ? "card panel" : "card"} aria-labelledby="sso-title" data-testid="sso-settings">
      <h2 id="sso-title">Single sign-on</h2>
      {!editing && (
        <p class="flush">
          {now ? (
            <>
              People sign in with <strong>{now.label}</strong> ({now.issuer}){now.passwords === "break_glass" ? `; only ${now.break_glass_login ?? "the break-glass admin"} may use a password.` : "; passwords work too."}{" "}
            </>
          ) : (
            "Not set up: people sign in with passwords. "
          )}
          <button type="button" class="button small secondary" onClick={open}>
            {now ? "Change…" : "Set up…"}
          </button>
        </p>
      )}
      {editing && (
        <form onSubmit={save} noValidate>
          {error && !(Object.values(PARAMS) as string[]).includes(error.param ?? "") && <Notice tone="error">{error.message}</Notice>}
          <p class="muted small">Register this redirect URI at your provider (a web application with a client secret):</p>
          <CopyBlock text={now?.redirect_uri ?? `${location.origin}/auth/v1/sso/${encodeURIComponent(session.org.slug)}/callback`} label="Copy redirect URI" />
          <div class="row">
            {input("sso-issuer", "Issuer URL", "issuer", "Its discovery document is read when you save.", "url")}
            {input("sso-label", "Button label", "label", "The sign-in page says: Sign in with …")}
          </div>
          <div class="row">
            {input("sso-client", "Client ID", "clientId")}
            {input("sso-secret", "Client secret", "secret", now?.has_secret ? "Kept; empty leaves it as it is." : "Kept sealed; never shown again.", "password")}
          </div>
          <div class="row">
            {input("sso-claim", "Groups claim", "roleClaim", "e.g. groups. Empty: roles are set here, not by the provider.")}
            {input("sso-admins", "Admin groups", "adminGroups", "Comma-separated: their people are admins; others members.")}
          </div>
          <div class="row">
            <Field id="sso-passwords" label="Passwords" error={err("passwords")}>
              <select id="sso-passwords" value={f.passwords} onChange={(e) => setF({ ...f, passwords: e.currentTarget.value })}>
                <option value="everyone">Everyone may still use one</option>
                <option value="break_glass">Only a break-glass admin</option>
              </select>
            </Field>
            {f.passwords === "break_glass" && input("sso-break-glass", "Break-glass admin's login", "breakGlass", "Signs in with a password when the provider is down.")}
          </div>
          <FormActions label="Save single sign-on" busyLabel="Checking the provider…" busy={busy} onCancel={() => setEditing(false)} />
        </form>
      )}
    </section>
  );
}

/** Each field's parameter, as the relay's errors name it. */
const PARAMS = { issuer: "issuer", clientId: "client_id", secret: "client_secret", label: "label", roleClaim: "role_claim", adminGroups: "admin_groups", passwords: "passwords", breakGlass: "break_glass_login" } as const;
