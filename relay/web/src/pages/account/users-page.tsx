import { useState } from "preact/hooks";
import type { ApiError } from "../../api/admin-client.js";
import { useLive } from "../../api/use-live.js";
import { useApp, useIsAdmin } from "../../app-context.js";
import { CopyBlock } from "../../components/copy-button.js";
import { DataTable } from "../../components/data-table.js";
import { describedBy, Field } from "../../components/field.js";
import { formatAgo } from "../../components/format.js";
import { Notice, PageHeader } from "../../components/notice.js";
import { FormActions } from "../../components/form-actions.js";

/** The people of the organization; admins add members and admins. */
export function UsersPage() {
  const { client, session } = useApp();
  const isAdmin = useIsAdmin();
  const users = useLive(() => client.call("GET /admin/v1/users").then((l) => l.data), [], []);
  const [adding, setAdding] = useState(false);
  const [login, setLogin] = useState("");
  const [role, setRole] = useState<"member" | "admin">("member");
  const [error, setError] = useState<ApiError | null>(null);
  const [created, setCreated] = useState<{ login: string; password: string } | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    const bytes = crypto.getRandomValues(new Uint8Array(15));
    const password = btoa(String.fromCharCode(...bytes)).replace(/[+/=]/g, "").slice(0, 18);
    try {
      await client.call("POST /admin/v1/users", { body: { org: session.org.id, login: login.trim(), role, password } });
      setCreated({ login: login.trim(), password });
      setLogin("");
      setAdding(false);
      users.reload();
    } catch (err) {
      setError(err as ApiError);
    }
  };
  return (
    <>
      <PageHeader title="People" subtitle={`Who signs in to ${session.org.name}. Admins manage machines, stacks, keys and people; members use the stacks and manage their own keys.`}>
        {isAdmin && !adding && (
          <button type="button" class="button primary" onClick={() => setAdding(true)}>
            Add person
          </button>
        )}
      </PageHeader>
      {created && (
        <section class="card panel">
          <h2>{created.login} can sign in now</h2>
          <p>Give them this first password; they can change it on their Account page. It is shown this once.</p>
          <CopyBlock text={created.password} label="Copy password" />
          <button type="button" class="button secondary" onClick={() => setCreated(null)}>
            Done
          </button>
        </section>
      )}
      {adding && (
        <section class="card panel" aria-labelledby="add-user-title">
          <h2 id="add-user-title">Add a person</h2>
          <form onSubmit={submit} class="inline-form" noValidate>
            <Field id="user-login" label="Login or email" error={error?.param === "login" ? error.message : null}>
              <input id="user-login" value={login} onInput={(e) => setLogin(e.currentTarget.value)} aria-describedby={describedBy("user-login", error?.message)} autoFocus />
            </Field>
            <Field id="user-role" label="Role">
              <select id="user-role" value={role} onChange={(e) => setRole(e.currentTarget.value as "member" | "admin")}>
                <option value="member">Member</option>
                <option value="admin">Admin</option>
              </select>
            </Field>
            <FormActions label="Add" onCancel={() => setAdding(false)} />
          </form>
          {error && error.param !== "login" && <Notice tone="error">{error.message}</Notice>}
        </section>
      )}
      {users.error && <Notice tone="error">{users.error.message}</Notice>}
      <DataTable
        label="People"
        rows={users.data ?? []}
        rowKey={(u) => u.id}
        columns={[
          {
            header: "Login",
            cell: (u) => (
              <>
                {u.login}
                {u.id === session.user.id && <span class="muted"> (you)</span>}
              </>
            ),
          },
          { header: "Role", cell: (u) => u.role },
          { header: "Added", class: "muted", cell: (u) => formatAgo(u.created_at) },
        ]}
      />
    </>
  );
}
