import { useState } from "preact/hooks";
import type { ApiError } from "../../api/admin-client.js";
import { useApp } from "../../app-context.js";
import { describedBy, Field } from "../../components/field.js";
import { Notice, PageHeader } from "../../components/notice.js";
import { FormActions } from "../../components/form-actions.js";

/** The signed-in user: who it is, and a way to change its password. */
export function AccountPage() {
  const { client, session } = useApp();
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [repeat, setRepeat] = useState("");
  const [error, setError] = useState<ApiError | { param: string; message: string } | null>(null);
  const [done, setDone] = useState(false);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setDone(false);
    if (next !== repeat) {
      setError({ param: "repeat", message: "The two new passwords differ." });
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await client.changePassword(current, next);
      setDone(true);
      setCurrent("");
      setNext("");
      setRepeat("");
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };
  const err = (param: string) => (error?.param === param ? error.message : null);
  return (
    <>
      <PageHeader title="Account" subtitle={`${session.user.login} · ${session.user.role} of ${session.org.name}`} />
      <section class="card narrow-card" aria-labelledby="password-title">
        <h2 id="password-title">Change password</h2>
        {done && <Notice tone="ok">Password changed. Your other sessions are signed out.</Notice>}
        {error && !["current_password", "new_password", "repeat"].includes(error.param ?? "") && <Notice tone="error">{error.message}</Notice>}
        <form onSubmit={submit} noValidate>
          {/* Tells password managers whose password this is. */}
          <input type="text" name="username" autoComplete="username" value={session.user.login} readOnly hidden />
          <Field id="current-password" label="Current password" error={err("current_password")}>
            <input id="current-password" type="password" autoComplete="current-password" value={current} onInput={(e) => setCurrent(e.currentTarget.value)} aria-describedby={describedBy("current-password", err("current_password"))} />
          </Field>
          <Field id="new-password" label="New password" hint="At least 10 characters." error={err("new_password")}>
            <input id="new-password" type="password" autoComplete="new-password" value={next} onInput={(e) => setNext(e.currentTarget.value)} aria-describedby={describedBy("new-password", err("new_password"))} />
          </Field>
          <Field id="repeat-password" label="New password again" error={err("repeat")}>
            <input id="repeat-password" type="password" autoComplete="new-password" value={repeat} onInput={(e) => setRepeat(e.currentTarget.value)} aria-describedby={describedBy("repeat-password", err("repeat"))} />
          </Field>
          <FormActions label="Change password" busyLabel="Changing…" busy={busy} />
        </form>
      </section>
    </>
  );
}
