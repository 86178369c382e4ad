import { useState } from "preact/hooks";
import type { ApiError } from "../../api/admin-client.js";
import { useLive } from "../../api/use-live.js";
import { useChoices } from "../../api/use-choices.js";
import { useRefresh } from "../../api/use-refresh.js";
import { useApp, useIsAdmin } from "../../app-context.js";
import { NameCell, type Column } from "../../components/data-table.js";
import { PagedTable } from "../../components/paged-table.js";
import { Link } from "../../components/link.js";
import { queryOf, toSearch } from "../../components/table-state.js";
import { useTableState } from "../../api/use-table-state.js";
import type { AdminCheckedQuery, ApiKeyWithUsage } from "../../api/types.js";
import { formatAgo, plural } from "../../components/format.js";
import { EmptyState, Notice, PageHeader } from "../../components/notice.js";
import { StateBadge } from "../../components/state-badge.js";
import { DefaultLimits, limitsText } from "./default-limits.js";
import { KeyForm } from "./key-form.js";

/** What the keys' table sorts by (the relay's `KEY_SORTS`). */
const KEY_SORTS = ["name", "state", "created_at", "last_used_at", "expires_at", "requests_24h", "tokens_24h"] as const satisfies readonly NonNullable<AdminCheckedQuery<"GET /admin/v1/keys">["sort"]>[];
/** The states a key is filtered by, in words. */
const KEY_STATES = [
  ["active", "Active"],
  ["expired", "Expired"],
  ["revoked", "Revoked"],
] as const satisfies readonly (readonly [NonNullable<AdminCheckedQuery<"GET /admin/v1/keys">["state"]>, string])[];

/** API keys without their secrets: restrictions, limits, expiry, use; create, edit and revoke. */
export function KeysPage() {
  const { client, session, notify } = useApp();
  const isAdmin = useIsAdmin();
  const [table, setTable] = useTableState(KEY_SORTS, KEY_STATES.map(([state]) => state));
  const page = useLive(() => client.call("GET /admin/v1/keys", { query: queryOf(table) }), ["key"], [toSearch(table)]);
  // Each key's requests and tokens of the last 24 h count up as it is used.
  useRefresh(page.reload);
  const choices = useChoices();
  const { stackName, machineName } = choices;
  const org = useLive(() => client.call("GET /admin/v1/orgs").then((l) => l.data.find((o) => o.id === session.org.id)), ["key"], []);
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<string | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  const revoke = async (id: string) => {
    setError(null);
    try {
      const revoked = await client.call("POST /admin/v1/keys/:id/revoke", { params: { id } });
      notify(`Key ${revoked.name ?? revoked.prefix} revoked: it is refused from its next request on.`);
      setConfirming(null);
      page.reload();
    } catch (err) {
      setError((err as ApiError).message);
    }
  };
  const list = page.data?.data ?? [];
  const mayChange = (k: (typeof list)[number]) => k.state !== "revoked" && (isAdmin || k.created_by === session.user.id);
  return (
    <>
      <PageHeader title="API keys" subtitle="Apps call the gateway with these keys as bearer tokens. A revoked key is refused from its next request on.">
        {!creating && (
          <button type="button" class="button primary" onClick={() => setCreating(true)}>
            Create key
          </button>
        )}
      </PageHeader>
      {creating && <KeyForm stacks={choices.data?.stacks ?? []} machines={choices.data?.machines ?? []} onClose={() => setCreating(false)} />}
      {editing && list.some((k) => k.id === editing) && (
        <KeyForm
          key={editing}
          stacks={choices.data?.stacks ?? []}
          machines={choices.data?.machines ?? []}
          editing={list.find((k) => k.id === editing)}
          onClose={() => {
            setEditing(null);
            page.reload();
          }}
        />
      )}
      {(error || page.error) && <Notice tone="error">{error ?? page.error?.message}</Notice>}
      <PagedTable
        page={page}
        table={table}
        onTable={setTable}
        noun="keys"
        one="key"
        states={KEY_STATES}
        placeholder="Search by name or prefix"
        hideEmpty={creating}
        empty={
          <EmptyState title="No API keys yet">
            <p>Create a key, then call the gateway with it from any OpenAI client.</p>
          </EmptyState>
        }
        label="API keys"
        rowKey={(k) => k.id}
        rowTestId={(k) => `key-row-${k.id}`}
        rowClass={(k) => (k.state === "active" ? "" : "dim")}
        columns={keyColumns({
          stackName,
          machineName,
          org: org.data,
          mayChange,
          confirming,
          confirm: setConfirming,
          revoke,
          edit: (id) => {
            setCreating(false);
            setEditing(id);
          },
        })}
      />
      <DefaultLimits org={org.data} onSaved={() => org.reload()} />
    </>
  );
}

/** What the keys' table's columns read, and what their buttons do. */
interface KeyColumns {
  stackName: (id: string) => string;
  machineName: (id: string) => string;
  /** The organization, for its default limits. */
  org: { default_key_rpm: number | null; default_key_tpm: number | null } | undefined;
  mayChange: (k: ApiKeyWithUsage) => boolean;
  /** The key whose revoke is being confirmed. */
  confirming: string | null;
  confirm: (id: string | null) => void;
  revoke: (id: string) => void;
  edit: (id: string) => void;
}

/** The keys' table: what each key is, its limits and use, and the actions on it. */
function keyColumns(c: KeyColumns): Column<ApiKeyWithUsage>[] {
  return [
    { header: "Name", sort: "name", cell: (k) => <NameCell name={k.name ?? <span class="muted">unnamed</span>} id={`${k.prefix}…`} /> },
    { header: "State", sort: "state", cell: (k) => <StateBadge state={k.state} /> },
    {
      header: "Restrictions",
      class: "small",
      cell: (k) => (
        <>
          {k.stack_ids ? `stacks: ${k.stack_ids.map(c.stackName).join(", ")}` : "all stacks"}
          <br />
          {k.machine_ids ? `machines: ${k.machine_ids.map(c.machineName).join(", ")}` : "any machine"}
        </>
      ),
    },
    {
      header: "Limits",
      class: "small",
      cell: (k) => (
        <>
          {limitsText(k.rpm, k.tpm)}
          {((!k.rpm && c.org?.default_key_rpm) || (!k.tpm && c.org?.default_key_tpm)) && (
            <div class="muted">with the defaults: {limitsText(k.rpm ?? c.org?.default_key_rpm, k.tpm ?? c.org?.default_key_tpm)}</div>
          )}
        </>
      ),
    },
    {
      header: "Last 24 h",
      sort: "requests_24h",
      class: "small nowrap",
      testId: (k) => `key-usage-${k.id}`,
      cell: (k) => (
        <>
          <Link href={`/requests?key=${k.id}`}>
            {plural(k.requests_24h, "request")}
          </Link>
          <br />
          {plural(k.tokens_24h, "token")}
        </>
      ),
    },
    {
      header: "Created · last used",
      sort: "created_at",
      class: "small muted",
      cell: (k) => (
        <>
          {formatAgo(k.created_at)}
          <br />
          {k.state === "revoked" ? `revoked ${formatAgo(k.revoked_at)}` : `used ${formatAgo(k.last_used_at)}`}
          {k.state !== "revoked" && k.expires_at !== null && (
            <>
              <br />
              <span data-testid={`key-expiry-${k.id}`}>
                {k.state === "expired" ? "expired" : "expires"} {new Date(k.expires_at).toLocaleDateString()}
              </span>
            </>
          )}
        </>
      ),
    },
    actionsColumn(c),
  ];
}

/** Edit and revoke (the revoke asked first), for a key the user may change. */
function actionsColumn(c: KeyColumns): Column<ApiKeyWithUsage> {
  return {
    header: "Actions",
    hideHeader: true,
    class: "row-actions",
    cell: (k) =>
      c.mayChange(k) &&
      (c.confirming === k.id ? (
        <span class="confirm" role="group" aria-label={`Revoke ${k.name ?? k.prefix}?`}>
          <span>Revoke? Apps using it stop working.</span>
          <button type="button" class="button small danger" onClick={() => c.revoke(k.id)}>
            Revoke key
          </button>
          <button type="button" class="button small secondary" onClick={() => c.confirm(null)}>
            Keep
          </button>
        </span>
      ) : (
        <span class="row-buttons">
          <button
            type="button"
            class="button small secondary"
            aria-label={`Edit ${k.name ?? k.prefix}`}
            onClick={() => c.edit(k.id)}
          >
            Edit
          </button>
          <button type="button" class="button small secondary" onClick={() => c.confirm(k.id)}>
            Revoke…
          </button>
        </span>
      )),
  };
}
