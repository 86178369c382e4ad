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
import { RegeneratePanel } from "./regenerate-panel.js";
import { ConfirmBar } from "../../components/confirm-bar.js";
import { RowMenu } from "../../components/row-menu.js";
import { BudgetMeter } from "../../components/budget.js";

/** What the keys' table sorts by (the relay's `KEY_SORTS`). */
const KEY_SORTS = ["name", "state", "created_at", "last_used_at", "expires_at", "requests_24h", "tokens_24h"] as const satisfies readonly NonNullable<AdminCheckedQuery<"GET /admin/v1/keys">["sort"]>[];
/** The states a key is filtered by, in words. */
const KEY_STATES = [
  ["active", "Active"],
  ["blocked", "Blocked"],
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
  const [confirming, setConfirming] = useState<Confirming | null>(null);
  const [regenerating, setRegenerating] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  /** Revokes, blocks or unblocks a key, and says what it means for its apps. */
  const act = async (id: string, action: "revoke" | "block" | "unblock") => {
    setError(null);
    try {
      const k = await client.call(`POST /admin/v1/keys/:id/${action}`, { params: { id } });
      const name = k.name ?? k.prefix;
      notify(
        action === "revoke"
          ? `Key ${name} revoked: it is refused from its next request on.`
          : action === "block"
            ? `Key ${name} blocked: refused from its next request on, until it is unblocked.`
            : `Key ${name} unblocked: served again from its next request on.`,
      );
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
      {regenerating && list.some((k) => k.id === regenerating) && (
        <RegeneratePanel
          key={regenerating}
          apiKey={list.find((k) => k.id === regenerating)!}
          onClose={() => {
            setRegenerating(null);
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
          isAdmin,
          confirming,
          confirm: setConfirming,
          act,
          edit: (id) => {
            setCreating(false);
            setRegenerating(null);
            setEditing(id);
          },
          regenerate: (id) => {
            setCreating(false);
            setEditing(null);
            setRegenerating(id);
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
  /** Admins block and unblock keys. */
  isAdmin: boolean;
  /** The key whose revoke or block is being confirmed. */
  confirming: Confirming | null;
  confirm: (c: Confirming | null) => void;
  act: (id: string, action: "revoke" | "block" | "unblock") => void;
  edit: (id: string) => void;
  regenerate: (id: string) => void;
}

/** A breaking action on a key, asked first. */
interface Confirming {
  id: string;
  action: "revoke" | "block";
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
      header: "Limits and tier",
      class: "small",
      cell: (k) => (
        <>
          {limitsText(k.rpm, k.tpm)}
          {((!k.rpm && c.org?.default_key_rpm) || (!k.tpm && c.org?.default_key_tpm)) && (
            <div class="muted">with the defaults: {limitsText(k.rpm ?? c.org?.default_key_rpm, k.tpm ?? c.org?.default_key_tpm)}</div>
          )}
          {/* The default tier goes unsaid; the others are news. */}
          {k.service_tier !== "default" && <div data-testid="key-tier">{k.service_tier === "priority" ? "Priority tier" : "Flex tier"}</div>}
          {k.budget && <BudgetMeter budget={k.budget} spent={k.budget_spent} testId={`key-budget-${k.id}`} />}
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

/**
 * Edit, regenerate and revoke, for a key the user may change; block and unblock for admins. Revoking and
 * blocking stop its apps: each is asked first.
 */
function actionsColumn(c: KeyColumns): Column<ApiKeyWithUsage> {
  return {
    header: "Actions",
    hideHeader: true,
    class: "row-actions",
    cell: (k) => {
      if (!c.mayChange(k)) return null;
      const name = k.name ?? k.prefix;
      const asked = c.confirming?.id === k.id ? c.confirming.action : null;
      if (asked) {
        return (
          <ConfirmBar
            question={asked === "revoke" ? "Revoke? Apps using it stop working, for good." : "Block? Apps using it are refused until it is unblocked."}
            button={asked === "revoke" ? "Revoke key" : "Block key"}
            onConfirm={() => c.act(k.id, asked)}
            onKeep={() => c.confirm(null)}
          />
        );
      }
      return (
        <span class="row-buttons">
          <button type="button" class="button small secondary" aria-label={`Edit ${name}`} onClick={() => c.edit(k.id)}>
            Edit
          </button>
          <RowMenu label={`More actions for ${name}`}>
            <button type="button" class="button small secondary" onClick={() => c.regenerate(k.id)}>
              Regenerate secret…
            </button>
            {c.isAdmin &&
              (k.state === "blocked" ? (
                <button type="button" class="button small secondary" onClick={() => c.act(k.id, "unblock")}>
                  Unblock
                </button>
              ) : (
                <button type="button" class="button small secondary" onClick={() => c.confirm({ id: k.id, action: "block" })}>
                  Block…
                </button>
              ))}
          </RowMenu>
          <button type="button" class="button small secondary" onClick={() => c.confirm({ id: k.id, action: "revoke" })}>
            Revoke…
          </button>
        </span>
      );
    },
  };
}
