import { useCallback, useEffect, useState } from "preact/hooks";
import type { ApiError } from "../../api/admin-client.js";
import type { AuditAction, AuditEvent } from "../../api/types.js";
import { useApp, useIsAdmin } from "../../app-context.js";
import { DataTable } from "../../components/data-table.js";
import { EmptyState, Notice, PageHeader } from "../../components/notice.js";
import { StateBadge } from "../../components/state-badge.js";
import { AuditFilters, filterOf, keepInAddress, queryOf, type AuditFilter } from "./audit-filters.js";

/** The filters offered: every event, or one family of actions. */
const FAMILIES = [
  ["", "Everything"],
  ["sign_in", "Sign-ins"],
  ["user", "People"],
  ["key", "API keys"],
  ["machine", "Machines"],
  ["stack", "Stacks"],
  ["org", "Organization"],
] as const;

/** Events a page shows at once: a phone shows each as a card a screen tall, so fewer there. */
const PAGE_SIZE = () => (matchMedia("(max-width: 860px)").matches ? 15 : 50);

/** Every action in words (an action the relay records and this table misses fails the type check). */
const ACTIONS: Record<AuditAction, string> = {
  sign_in: "Signed in",
  "user.created": "Added a person",
  "user.disabled": "Disabled a person",
  "user.enabled": "Enabled a person",
  "user.role_changed": "Changed a role",
  "user.password_reset": "Reset a password",
  "user.password_changed": "Changed own password",
  "user.deleted": "Deleted a person",
  "key.created": "Created a key",
  "key.changed": "Changed a key",
  "key.revoked": "Revoked a key",
  "key.blocked": "Blocked a key",
  "key.unblocked": "Unblocked a key",
  "key.regenerated": "Regenerated a key's secret",
  "machine.created": "Added a machine",
  "machine.renamed": "Renamed a machine",
  "machine.revoked": "Revoked a machine",
  "machine.token_rotated": "Rotated a machine's token",
  "machine.deleted": "Deleted a machine",
  "stack.created": "Created a stack",
  "stack.deployed": "Deployed a stack",
  "stack.undeployed": "Undeployed a stack",
  "stack.loaded": "Loaded a stack's model",
  "stack.unloaded": "Unloaded a stack's model",
  "stack.changed": "Changed a stack",
  "stack.deleted": "Deleted a stack",
  "org.created": "Created the organization",
  "org.limits_changed": "Changed default key limits",
};

const who = (e: AuditEvent) => (e.actor.kind === "operator" ? "Operator (admin token)" : e.actor.kind === "bootstrap" ? "makina up" : e.actor.kind === "anonymous" ? `Not signed in${e.actor.login ? ` as ${e.actor.login}` : ""}` : (e.actor.login ?? e.actor.id ?? "—"));
/** A detail's value in words: none, a list, a time (the fields named `…_at`), or as it is. */
const detailValue = (k: string, v: unknown) => (v === null ? "none" : Array.isArray(v) ? v.join(", ") : k.endsWith("_at") && typeof v === "number" ? new Date(v).toLocaleString() : String(v));
const detail = (e: AuditEvent) => (e.detail ? Object.entries(e.detail).map(([k, v]) => `${k.replaceAll("_", " ")}: ${detailValue(k, v)}`).join(" · ") : "");

/** Who did what, when and from where: the organization's security-relevant actions, newest first (admins). */
export function AuditPage() {
  const { client } = useApp();
  const isAdmin = useIsAdmin();
  const [filter, setFilterState] = useState(() => filterOf(location.search));
  const setFilter = useCallback((f: AuditFilter) => {
    setFilterState(f);
    keepInAddress(f);
  }, []);
  const query = queryOf(filter, (family) => family || undefined);
  const [events, setEvents] = useState<AuditEvent[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);

  const load = async (before: string | null, append: boolean) => {
    setLoading(true);
    setError(null);
    try {
      const page = await client.call("GET /admin/v1/audit", { query: { ...query, action: query.action as never, limit: PAGE_SIZE(), before: before ?? undefined } });
      setEvents((old) => (append && old ? [...old, ...page.data] : page.data));
      setNext(page.next);
    } catch (err) {
      setError((err as ApiError).message);
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => {
    if (isAdmin) void load(null, false);
  }, [JSON.stringify(filter), isAdmin]);

  if (!isAdmin) {
    return (
      <>
        <PageHeader title="Audit log" />
        <EmptyState title="Only admins read the audit log" />
      </>
    );
  }
  return (
    <>
      <PageHeader title="Audit log" subtitle="Who did what, when and from where: sign-ins, people, keys, machines, stacks and limits, newest first.">
        <button type="button" class="button secondary" disabled={loading} onClick={() => load(null, false)}>
          Refresh
        </button>
        <a class="button secondary" href={client.exportUrl("GET /admin/v1/audit.csv", { ...query, action: query.action as never })} download data-testid="audit-export">
          Export CSV
        </a>
      </PageHeader>
      <AuditFilters filter={filter} onChange={setFilter} families={FAMILIES} />
      {error && <Notice tone="error">{error}</Notice>}
      {events === null && !error && <p class="muted" aria-busy="true">Loading the audit log…</p>}
      {events && events.length === 0 && (Object.values(filter).some(Boolean) ? <p class="muted">No event matches.</p> : <EmptyState title="Nothing recorded yet" />)}
      {events && events.length > 0 && (
        <DataTable
          label="Audit log"
          testId="audit-table"
          rows={events}
          rowKey={(e) => e.id}
          rowTestId={(e) => `audit-${e.action}`}
          columns={[
            { header: "When", class: "small nowrap", cell: (e) => <time dateTime={new Date(e.at).toISOString()}>{new Date(e.at).toLocaleString()}</time> },
            {
              header: "Action",
              cell: (e) => (
                <>
                  {ACTIONS[e.action] ?? e.action}
                  {e.outcome === "failure" && <StateBadge state="failed" label="refused" />}
                  <div class="muted mono small">{e.action}</div>
                </>
              ),
            },
            { header: "Who", cell: who },
            { header: "From", class: "mono small", cell: (e) => e.address ?? "—" },
            {
              header: "Target",
              class: "small",
              cell: (e) =>
                e.target ? (
                  <>
                    {e.target.name ?? e.target.id}
                    <div class="muted mono small">{e.target.id}</div>
                  </>
                ) : (
                  "—"
                ),
            },
            { header: "Detail", class: "small muted detail", cell: detail },
          ]}
        />
      )}
      {next && (
        <p>
          <button type="button" class="button secondary" disabled={loading} onClick={() => load(next, true)}>
            Show older
          </button>
        </p>
      )}
    </>
  );
}
