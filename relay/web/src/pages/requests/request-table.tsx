import type { LoggedRequest } from "../../api/types.js";
import { DataTable, type Column } from "../../components/data-table.js";
import { formatAgo } from "../../components/format.js";
import { Link } from "../../components/link.js";
import { StateBadge } from "../../components/state-badge.js";
import { apiText, endingText, msText, OUTCOME_BADGE, outcomeOf, tierText } from "./request-words.js";

/** Requests of the log as a table: when, how it ended, key, model (and stack), tokens, times; each links to its page. */
export function RequestTable({ rows, loading, label = "Requests", hide = [] }: { rows: readonly LoggedRequest[]; loading?: boolean; label?: string; hide?: readonly ("key" | "stack")[] }) {
  const columns: (Column<LoggedRequest> | false)[] = [
    {
      header: "When",
      class: "small nowrap",
      cell: (r) => (
        <Link href={`/requests/${r.id}`}>
          <time dateTime={new Date(r.at).toISOString()} title={new Date(r.at).toLocaleString()}>
            {formatAgo(r.at)}
          </time>
        </Link>
      ),
    },
    {
      header: "Status",
      testId: (r) => `request-status-${r.id}`,
      cell: (r) => (
        <>
          <StateBadge state={OUTCOME_BADGE[outcomeOf(r)]} label={String(r.status)} />
          <div class="small">{endingText(r)}</div>
        </>
      ),
    },
    {
      header: "API and tier",
      class: "small",
      testId: (r) => `request-api-${r.id}`,
      cell: (r) => (
        <>
          {apiText(r.api)}
          {r.service_tier && (
            <div class="muted" data-testid={`request-tier-${r.id}`}>
              {tierText(r.service_tier)} tier
            </div>
          )}
        </>
      ),
    },
    !hide.includes("key") && { header: "Key", class: "small", cell: (r) => r.key_name ?? (r.key_id ? <span class="mono">{r.key_id}</span> : "—") },
    {
      header: "Model",
      class: "small",
      cell: (r) => (
        <>
          <span class="mono">{r.model || "—"}</span>
          {r.stream && <span class="muted"> · streamed</span>}
          {!hide.includes("stack") && r.stack_id && (
            <div class="muted">
              on <Link href={`/stacks/${r.stack_id}`}>{r.stack_name ?? r.stack_id}</Link>
            </div>
          )}
        </>
      ),
    },
    {
      header: "Tokens in → out",
      class: "small nowrap",
      cell: (r) =>
        r.prompt_tokens || r.completion_tokens ? (
          <>
            {`${r.prompt_tokens.toLocaleString("en-US")} → ${r.completion_tokens.toLocaleString("en-US")}`}
            {/* What the runtime held already of the prompt, and did not evaluate again. */}
            {r.cached_tokens > 0 && (
              <div class="muted" data-testid={`request-cached-${r.id}`}>
                {r.cached_tokens.toLocaleString("en-US")} cached
              </div>
            )}
          </>
        ) : (
          "—"
        ),
    },
    { header: "Latency", class: "small nowrap", cell: (r) => msText(r.latency_ms) },
    // Time to first token is what a streamed request's client sees; a non-streamed one waits for the whole answer (its page says so).
    { header: "First token", class: "small nowrap", cell: (r) => (r.stream ? msText(r.first_token_ms) : "—") },
  ];
  return <DataTable label={label} testId="request-table" rows={rows} loading={loading} rowKey={(r) => r.id} rowTestId={(r) => `request-${r.id}`} columns={columns.filter((c): c is Column<LoggedRequest> => c !== false)} />;
}
