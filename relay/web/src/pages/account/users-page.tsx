import { useState } from "preact/hooks";
import type { ApiError } from "../../api/admin-client.js";
import type { AdminCheckedQuery, User } from "../../api/types.js";
import { useLive } from "../../api/use-live.js";
import { useApp, useIsAdmin } from "../../app-context.js";
import { CopyBlock } from "../../components/copy-button.js";
import { PagedTable } from "../../components/paged-table.js";
import { queryOf, toSearch } from "../../components/table-state.js";
import { useTableState } from "../../api/use-table-state.js";
import { describedBy, Field } from "../../components/field.js";
import { formatAgo } from "../../components/format.js";
import { EmptyState, Notice, PageHeader } from "../../components/notice.js";
import { FormActions } from "../../components/form-actions.js";
import { useEscape } from "../../components/use-escape.js";
import { StateBadge } from "../../components/state-badge.js";
import { SsoSettings } from "./sso-settings.js";

/** A first or reset password: 18 random letters and digits, for the admin to pass on. */
function newPassword(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(15));
  return btoa(String.fromCharCode(...bytes)).replace(/[+/=]/g, "").slice(0, 18);
}

type UserQuery = AdminCheckedQuery<"GET /admin/v1/users">;
/** What the people's table sorts by (the relay's `USER_SORTS`). */
const USER_SORTS = ["login", "role", "created_at"] as const satisfies readonly NonNullable<UserQuery["sort"]>[];
/** The states a person is filtered by, in words. */
const USER_STATES = [
  ["active", "Active"],
  ["disabled", "Disabled"],
] as const satisfies readonly (readonly [NonNullable<UserQuery["state"]>, string])[];

/** What an admin can do to a person, each confirmed first: what it does, in words. */
type Action = "disable" | "role" | "reset" | "delete";

function question(action: Action, u: User): { ask: string; confirm: string } {
  switch (action) {
    case "disable":
      return { ask: `Disable ${u.login}? They are signed out at once, cannot sign in, and the keys they made stop working until enabled.`, confirm: "Disable" };
    case "role":
      return u.role === "admin"
        ? { ask: `Make ${u.login} a member? They are signed out and sign in again without admin rights.`, confirm: "Make member" }
        : { ask: `Make ${u.login} an admin? They are signed out and sign in again able to manage everything.`, confirm: "Make admin" };
    case "reset":
      return { ask: `Give ${u.login} a new password? They are signed out; you pass the new password on.`, confirm: "Reset password" };
    case "delete":
      return { ask: `Delete ${u.login}? They are signed out and every key they made is revoked. This cannot be undone.`, confirm: "Delete" };
  }
}

/** The people of the organization; admins add, disable, re-role, reset and delete them. */
export function UsersPage() {
  const { client, session } = useApp();
  const isAdmin = useIsAdmin();
  const [table, setTable] = useTableState(USER_SORTS, USER_STATES.map(([state]) => state));
  const users = useLive(() => client.call("GET /admin/v1/users", { query: queryOf(table) }), [], [toSearch(table)]);
  const [adding, setAdding] = useState(false);
  const [rowError, setRowError] = useState<string | null>(null);
  const [confirming, setConfirming] = useState<{ id: string; action: Action } | null>(null);
  const [busy, setBusy] = useState(false);
  const [shown, setShown] = useState<{ title: string; password: string } | null>(null);
  const [done, setDone] = useState<string | null>(null);

  const act = async (u: User, action: Action | "enable") => {
    setRowError(null);
    setDone(null);
    setBusy(true);
    try {
      if (action === "disable" || action === "enable") {
        await client.call("PATCH /admin/v1/users/:id", { params: { id: u.id }, body: { disabled: action === "disable" } });
        setDone(action === "disable" ? `${u.login} is disabled: signed out, and their keys answer 401.` : `${u.login} can sign in again, and their keys work again.`);
      } else if (action === "role") {
        const next = u.role === "admin" ? "member" : "admin";
        await client.call("PATCH /admin/v1/users/:id", { params: { id: u.id }, body: { role: next } });
        setDone(`${u.login} is now ${next === "admin" ? "an admin" : "a member"}.`);
      } else if (action === "reset") {
        const password = newPassword();
        await client.call("POST /admin/v1/users/:id/reset-password", { params: { id: u.id }, body: { password } });
        setShown({ title: `${u.login}'s new password`, password });
      } else {
        const gone = await client.call("DELETE /admin/v1/users/:id", { params: { id: u.id } });
        setDone(`${u.login} is deleted${gone.keys_revoked ? `; ${gone.keys_revoked} key${gone.keys_revoked === 1 ? "" : "s"} revoked` : ""}.`);
      }
      setConfirming(null);
      users.reload();
    } catch (err) {
      setRowError((err as ApiError).message);
    } finally {
      setBusy(false);
    }
  };

  const actions = (u: User) =>
    isAdmin && u.id !== session.user.id ? (
      <PersonActions
        u={u}
        confirming={confirming?.id === u.id ? confirming.action : null}
        busy={busy}
        onAct={(action) => act(u, action)}
        onConfirm={(action) => {
          setRowError(null);
          setConfirming(action ? { id: u.id, action } : null);
        }}
      />
    ) : null;

  return (
    <>
      <PageHeader
        title="People"
        subtitle={`Who signs in to ${session.org.name}. Admins manage machines, stacks, keys and people; members use the stacks and manage their own keys. A disabled person cannot sign in, and the keys they made stop working.`}
      >
        {isAdmin && !adding && (
          <button type="button" class="button primary" onClick={() => setAdding(true)}>
            Add person
          </button>
        )}
      </PageHeader>
      {shown && <PasswordShown {...shown} onDone={() => setShown(null)} />}
      {adding && (
        <AddPersonForm
          onAdded={(added) => {
            setShown(added);
            setAdding(false);
            users.reload();
          }}
          onCancel={() => setAdding(false)}
        />
      )}
      {done && <Notice tone="ok">{done}</Notice>}
      {(rowError || users.error) && <Notice tone="error">{rowError ?? users.error?.message}</Notice>}
      <PagedTable
        page={users}
        table={table}
        onTable={setTable}
        noun="people"
        one="person"
        states={USER_STATES}
        placeholder="Search by login"
        empty={<EmptyState title="Nobody yet" />}
        label="People"
        rowKey={(u) => u.id}
        rowTestId={(u) => `user-row-${u.login}`}
        rowClass={(u) => (u.disabled_at ? "dim" : "")}
        columns={[
          {
            header: "Login",
            sort: "login",
            cell: (u) => (
              <>
                {u.login}
                {u.id === session.user.id && <span class="muted"> (you)</span>}
              </>
            ),
          },
          { header: "Role", sort: "role", cell: (u) => u.role },
          { header: "State", cell: (u) => <StateBadge state={u.disabled_at ? "disabled" : "active"} /> },
          { header: "Added", sort: "created_at", class: "muted", cell: (u) => formatAgo(u.created_at) },
          { header: "Actions", hideHeader: true, class: "row-actions", cell: actions },
        ]}
      />
      {isAdmin && <SsoSettings />}
    </>
  );
}

/** A password made here, shown once with a way to copy it. */
function PasswordShown({ title, password, onDone }: { title: string; password: string; onDone: () => void }) {
  return (
    <section class="card panel">
      <h2>{title}</h2>
      <p>Give them this password; they can change it on their Account page. It is shown this once.</p>
      <CopyBlock text={password} label="Copy password" />
      <button type="button" class="button secondary" onClick={onDone}>
        Done
      </button>
    </section>
  );
}

/** Adds a person to the organization with a password made here (shown once by the page). */
function AddPersonForm({ onAdded, onCancel }: { onAdded: (shown: { title: string; password: string }) => void; onCancel: () => void }) {
  useEscape(onCancel);
  const { client, session } = useApp();
  const [login, setLogin] = useState("");
  const [role, setRole] = useState<"member" | "admin">("member");
  const [error, setError] = useState<ApiError | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    const password = newPassword();
    try {
      await client.call("POST /admin/v1/users", { body: { org: session.org.id, login: login.trim(), role, password } });
      onAdded({ title: `${login.trim()} can sign in now`, password });
    } catch (err) {
      setError(err as ApiError);
    }
  };
  return (
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
        <FormActions label="Add" onCancel={onCancel} />
      </form>
      {error && error.param !== "login" && <Notice tone="error">{error.message}</Notice>}
    </section>
  );
}

/** A person's actions: enable at once; disable, change role, reset the password and delete once asked again. */
function PersonActions({ u, confirming, busy, onAct, onConfirm }: { u: User; confirming: Action | null; busy: boolean; onAct: (action: Action | "enable") => void; onConfirm: (action: Action | null) => void }) {
  if (confirming) {
    const q = question(confirming, u);
    return (
      <span class="confirm" role="group" aria-label={q.confirm}>
        <span>{q.ask}</span>
        <button type="button" class={`button small ${confirming === "role" || confirming === "reset" ? "primary" : "danger"}`} disabled={busy} onClick={() => onAct(confirming)}>
          {q.confirm}
        </button>
        <button type="button" class="button small secondary" onClick={() => onConfirm(null)}>
          Cancel
        </button>
      </span>
    );
  }
  const ask = (action: Action) => () => onConfirm(action);
  return (
    <span class="row-buttons">
      {u.disabled_at ? (
        <button type="button" class="button small secondary" disabled={busy} onClick={() => onAct("enable")}>
          Enable
        </button>
      ) : (
        <button type="button" class="button small secondary" onClick={ask("disable")}>
          Disable…
        </button>
      )}
      <button type="button" class="button small secondary" onClick={ask("role")}>
        {u.role === "admin" ? "Make member…" : "Make admin…"}
      </button>
      <button type="button" class="button small secondary" onClick={ask("reset")}>
        Reset password…
      </button>
      <button type="button" class="button small secondary danger-text" onClick={ask("delete")}>
        Delete…
      </button>
    </span>
  );
}
