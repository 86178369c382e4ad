import { useState } from "preact/hooks";
import { useLive } from "../../api/use-live.js";
import { useRefresh } from "../../api/use-refresh.js";
import { useTableState } from "../../api/use-table-state.js";
import type { AdminCheckedQuery } from "../../api/types.js";
import { useApp } from "../../app-context.js";
import { DataTable } from "../../components/data-table.js";
import { ListControls } from "../../components/list-controls.js";
import { EmptyState, Notice, PageHeader } from "../../components/notice.js";
import { queryOf, toggleSort, toSearch } from "../../components/table-state.js";
import { UsageChart } from "./usage-chart.js";
import { BudgetMeter } from "../../components/budget.js";
import { Link } from "../../components/link.js";

/** What the totals sort by (the relay's `USAGE_SORTS`). */
const USAGE_SORTS = ["name", "requests", "errors", "prompt_tokens", "completion_tokens"] as const satisfies readonly NonNullable<AdminCheckedQuery<"GET /admin/v1/usage">["sort"]>[];
type Range = "24h" | "30d";
type By = "key" | "model";

/** The range and grouping an address names (`?range=30d&by=model`), else the last day per key. */
function viewOf(search: string): { range: Range; by: By } {
  const p = new URLSearchParams(search);
  return { range: p.get("range") === "30d" ? "30d" : "24h", by: p.get("by") === "model" ? "model" : "key" };
}

const n = (x: number) => x.toLocaleString("en-US");

/**
 * Requests and tokens over time, per key or per model, for the last 24 hours or 30 days, read again every 5 s:
 * the busiest groups drawn, and every group's totals in a table paged and searched on the relay. The view is
 * kept in the page's address.
 */
export function UsagePage() {
  const { client, session } = useApp();
  const [view, setView] = useState(() => viewOf(location.search));
  const [table, setTable] = useTableState(USAGE_SORTS, [], ["range", "by"]);
  const { range, by } = view;
  const usage = useLive(() => client.call("GET /admin/v1/usage", { query: { range, by, ...queryOf(table) } }), ["key", "stack"], [range, by, toSearch(table)]);
  // Its budget, spent against it (the keys' own are on the Keys page).
  const org = useLive(() => client.call("GET /admin/v1/orgs").then((l) => l.data.find((o) => o.id === session.org.id)), ["key"], []);
  // Requests are counted by the second: the page follows them.
  useRefresh(usage.reload);
  const choose = (next: { range: Range; by: By }) => {
    setView(next);
    const p = new URLSearchParams(location.search);
    p.set("range", next.range);
    p.set("by", next.by);
    history.replaceState(history.state, "", `${location.pathname}?${p.toString()}`);
    // Another grouping searches other names: the search and page start again.
    setTable({ ...table, q: next.by === by ? table.q : "", page: 1 });
  };
  const label = (s: { group: string; name: string | null }) =>
    s.group === "other" ? "all others" : by === "model" ? s.group || "refused before a model was chosen" : (s.name ?? `a deleted key (${s.group})`);
  const series = (usage.data?.series ?? []).map((s) => ({ ...s, label: label(s) }));
  const totals = (usage.data?.totals ?? []).map((s) => ({ ...s, label: label(s) }));
  const groups = by === "key" ? "keys" : "models";
  return (
    <>
      <PageHeader title="Usage" subtitle="Requests and tokens through the gateway, as the relay counted them.">
        <div class="segmented" role="group" aria-label="Range">
          {(["24h", "30d"] as const).map((r) => (
            <button key={r} type="button" aria-pressed={range === r} class={range === r ? "active" : ""} onClick={() => choose({ range: r, by })}>
              {r === "24h" ? "Last 24 hours" : "Last 30 days"}
            </button>
          ))}
        </div>
        <div class="segmented" role="group" aria-label="Group by">
          {(["key", "model"] as const).map((b) => (
            <button key={b} type="button" aria-pressed={by === b} class={by === b ? "active" : ""} onClick={() => choose({ range, by: b })}>
              Per {b}
            </button>
          ))}
        </div>
      </PageHeader>
      {usage.error && <Notice tone="error">{usage.error.message}</Notice>}
      {org.data?.budget && (
        <div class="card budget">
          Token budget of the organization: <BudgetMeter budget={org.data.budget} spent={org.data.budget_spent} testId="usage-budget" /> <Link href="/keys">Keys' budgets</Link>
        </div>
      )}
      {usage.data && usage.data.groups === 0 && (
        <EmptyState title="No requests in this period">
          <p>Calls through the gateway show here within seconds.</p>
        </EmptyState>
      )}
      {usage.data && usage.data.groups > 0 && (
        <>
          <section class="card" aria-labelledby="requests-chart">
            <h2 id="requests-chart">Requests</h2>
            <UsageChart series={series} metric={(p) => p.requests} bucketMs={usage.data.bucket_ms} unit="requests" />
          </section>
          <section class="card" aria-labelledby="tokens-chart">
            <h2 id="tokens-chart">Tokens (prompt + completion)</h2>
            <UsageChart series={series} metric={(p) => p.prompt_tokens + p.completion_tokens} bucketMs={usage.data.bucket_ms} unit="tokens" />
          </section>
          {series.some((s) => s.group === "other") && (
            <p class="muted small" data-testid="usage-drawn">
              The charts draw the {series.length - 1} busiest of {n(usage.data.groups)} {groups}; “all others” adds up the rest. The table lists them all.
            </p>
          )}
          <section aria-labelledby="usage-totals">
            <h2 id="usage-totals" class="section-title">
              Totals per {by}
            </h2>
            <ListControls label={groups} table={table} onChange={setTable} total={usage.data.total} states={[]} placeholder={by === "key" ? "Search by key name or id" : "Search by model id"} />
            {usage.data.total === 0 ? (
              <p class="muted">No {by} matches.</p>
            ) : (
              <>
                <p class="muted small" data-testid="usage-sum">
                  {table.q ? `The ${n(usage.data.total)} matching` : `All ${n(usage.data.total)}`} {usage.data.total === 1 ? by : groups}: {n(usage.data.sum.requests)} requests, {n(usage.data.sum.errors)} errors,{" "}
                  {n(usage.data.sum.prompt_tokens + usage.data.sum.completion_tokens)} tokens.
                </p>
                <DataTable
                  label="Usage totals"
                  rows={totals}
                  rowKey={(s) => s.group}
                  rowTestId={(s) => `usage-row-${s.group}`}
                  sorted={{ sort: table.sort, order: table.order, onSort: (field) => setTable(toggleSort(table, field as (typeof USAGE_SORTS)[number])) }}
                  columns={[
                    { header: by === "key" ? "Key" : "Model", sort: "name", class: "wrap", cell: (s) => s.label },
                    { header: "Requests", sort: "requests", cell: (s) => n(s.total.requests) },
                    { header: "Errors", sort: "errors", cell: (s) => n(s.total.errors) },
                    { header: "Prompt tokens", sort: "prompt_tokens", cell: (s) => n(s.total.prompt_tokens) },
                    { header: "Completion tokens", sort: "completion_tokens", cell: (s) => n(s.total.completion_tokens) },
                  ]}
                />
              </>
            )}
          </section>
        </>
      )}
    </>
  );
}
