import { useState } from "preact/hooks";
import { useLive } from "../../api/use-live.js";
import { useRefresh } from "../../api/use-refresh.js";
import { useApp } from "../../app-context.js";
import { DataTable } from "../../components/data-table.js";
import { EmptyState, Notice, PageHeader } from "../../components/notice.js";
import { UsageChart } from "./usage-chart.js";

/** Requests and tokens over time, per key or per model, for the last 24 hours or 30 days, read again every 5 s. */
export function UsagePage() {
  const { client } = useApp();
  const [range, setRange] = useState<"24h" | "30d">("24h");
  const [by, setBy] = useState<"key" | "model">("key");
  const usage = useLive(() => client.call("GET /admin/v1/usage", { query: { range, by } }), ["key", "stack"], [range, by]);
  // Requests are counted by the second: the page follows them.
  useRefresh(usage.reload);
  const label = (s: { group: string; name: string | null }) =>
    s.group === "other" ? "all others" : by === "model" ? s.group || "refused before a model was chosen" : (s.name ?? `a deleted key (${s.group})`);
  const series = (usage.data?.series ?? []).map((s) => ({ ...s, label: label(s) }));
  const totals = (usage.data?.totals ?? []).map((s) => ({ ...s, label: label(s) }));
  return (
    <>
      <PageHeader title="Usage" subtitle="Requests and tokens through the gateway, as the relay counted them.">
        <div class="segmented" role="group" aria-label="Range">
          {(["24h", "30d"] as const).map((r) => (
            <button key={r} type="button" aria-pressed={range === r} class={range === r ? "active" : ""} onClick={() => setRange(r)}>
              {r === "24h" ? "Last 24 hours" : "Last 30 days"}
            </button>
          ))}
        </div>
        <div class="segmented" role="group" aria-label="Group by">
          {(["key", "model"] as const).map((b) => (
            <button key={b} type="button" aria-pressed={by === b} class={by === b ? "active" : ""} onClick={() => setBy(b)}>
              Per {b}
            </button>
          ))}
        </div>
      </PageHeader>
      {usage.error && <Notice tone="error">{usage.error.message}</Notice>}
      {usage.data && series.length === 0 && (
        <EmptyState title="No requests in this period">
          <p>Calls through the gateway show here within seconds.</p>
        </EmptyState>
      )}
      {usage.data && series.length > 0 && (
        <>
          <section class="card" aria-labelledby="requests-chart">
            <h2 id="requests-chart">Requests</h2>
            <UsageChart series={series} metric={(p) => p.requests} bucketMs={usage.data.bucket_ms} />
          </section>
          <section class="card" aria-labelledby="tokens-chart">
            <h2 id="tokens-chart">Tokens (prompt + completion)</h2>
            <UsageChart series={series} metric={(p) => p.prompt_tokens + p.completion_tokens} bucketMs={usage.data.bucket_ms} />
          </section>
          {usage.data.groups > totals.filter((t) => t.group !== "other").length && (
            <p class="muted small" data-testid="usage-listed">
              The {totals.filter((t) => t.group !== "other").length} busiest of {usage.data.groups.toLocaleString("en-US")} {by === "key" ? "keys" : "models"}; “all others” adds up the rest.
            </p>
          )}
          <DataTable
            label="Usage totals"
            rows={totals}
            rowKey={(s) => s.group}
            rowTestId={(s) => `usage-row-${s.group}`}
            columns={[
              { header: by === "key" ? "Key" : "Model", cell: (s) => s.label },
              { header: "Requests", cell: (s) => s.total.requests.toLocaleString("en-US") },
              { header: "Errors", cell: (s) => s.total.errors.toLocaleString("en-US") },
              { header: "Prompt tokens", cell: (s) => s.total.prompt_tokens.toLocaleString("en-US") },
              { header: "Completion tokens", cell: (s) => s.total.completion_tokens.toLocaleString("en-US") },
            ]}
          />
        </>
      )}
    </>
  );
}
