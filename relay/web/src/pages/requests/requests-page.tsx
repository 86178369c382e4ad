import { useState } from "preact/hooks";
import { useLive } from "../../api/use-live.js";
import { useChoices } from "../../api/use-choices.js";
import { useRefresh } from "../../api/use-refresh.js";
import { useTableState } from "../../api/use-table-state.js";
import { useApp } from "../../app-context.js";
import { Link } from "../../components/link.js";
import { ListControls } from "../../components/list-controls.js";
import { EmptyState, Notice, PageHeader } from "../../components/notice.js";
import { toSearch } from "../../components/table-state.js";
import { RequestTable } from "./request-table.js";
import { API_WORDS, STATUS_FILTERS, TIER_WORDS } from "./request-words.js";

/**
 * The request log: the organization's gateway requests, newest first, refused ones too: searched (a request id,
 * part of a model), filtered by status, stack and key (`?stack=`, `?key=`: a stack's or key's page links here),
 * a page at a time, and, on the first page, read again every few seconds.
 */
export function RequestsPage() {
  const { client } = useApp();
  const [table, setTable] = useTableState([] as const, STATUS_FILTERS.map(([s]) => s), ["stack", "key", "api", "service_tier"]);
  const [fixed, setFixed] = useState(() => {
    const p = new URLSearchParams(location.search);
    const api = p.get("api");
    const tier = p.get("service_tier");
    return {
      stack: p.get("stack") ?? undefined,
      key: p.get("key") ?? undefined,
      api: api !== null && Object.hasOwn(API_WORDS, api) ? (api as keyof typeof API_WORDS) : undefined,
      service_tier: tier !== null && Object.hasOwn(TIER_WORDS, tier) ? (tier as keyof typeof TIER_WORDS) : undefined,
    };
  });
  const [live, setLive] = useState(true);
  const query = { q: table.q.trim() || undefined, status: table.state ?? undefined, page: table.page, per_page: table.perPage, ...fixed };
  const page = useLive(() => client.call("GET /admin/v1/requests", { query }), [], [toSearch(table), fixed.stack, fixed.key, fixed.api, fixed.service_tier]);
  const choices = useChoices();
  const stacks = { data: choices.data?.stacks };
  const keyName = page.data?.data.find((r) => r.key_id === fixed.key)?.key_name;
  const following = live && table.page === 1;
  useRefresh(page.reload, { on: following });

  const filterBy = (name: "stack" | "key" | "api" | "service_tier", value: string | undefined) => {
    const next = { ...fixed, [name]: value };
    setFixed(next);
    const p = new URLSearchParams(location.search);
    if (value) p.set(name, value);
    else p.delete(name);
    p.delete("page");
    const search = p.toString();
    history.replaceState(history.state, "", location.pathname + (search ? `?${search}` : ""));
    setTable({ ...table, page: 1 });
  };
  const unfiltered = !table.q && !table.state && !fixed.stack && !fixed.key && !fixed.api && !fixed.service_tier;
  return (
    <>
      <PageHeader title="Requests" subtitle="The gateway's requests, newest first, refused ones too: which key called which model, how it ended and how long it took. Prompts and answers are kept only for stacks that capture them.">
        <label class="inline-label">
          <input type="checkbox" checked={live} onChange={(e) => setLive(e.currentTarget.checked)} />
          <span>Live</span>
        </label>
        <a class="button secondary" href={client.exportUrl("GET /admin/v1/requests.csv", { q: query.q, status: query.status as never, stack: query.stack, key: query.key, api: query.api, service_tier: query.service_tier })} download data-testid="requests-export">
          Export CSV
        </a>
      </PageHeader>
      {page.error && <Notice tone="error">{page.error.message}</Notice>}
      <div class="list-controls-row">
        <ListControls label="requests" table={table} onChange={setTable} total={page.data?.total} states={STATUS_FILTERS} placeholder="Search by request id or model" everyState="Every status" stateLabel="status" />
        <FilterSelect
          label="Stack"
          of="stack"
          every="Every stack"
          value={fixed.stack}
          // A stack named by the address and no longer listed is still shown, by its id.
          choices={[...(fixed.stack && !stacks.data?.some((s) => s.id === fixed.stack) ? [[fixed.stack, fixed.stack] as const] : []), ...(stacks.data ?? []).map((s) => [s.id, s.name] as const)]}
          onChange={(v) => filterBy("stack", v)}
        />
        <FilterSelect label="API" of="API" every="Every API" value={fixed.api} choices={Object.entries(API_WORDS)} onChange={(v) => filterBy("api", v)} />
        <FilterSelect label="Tier" of="service tier" every="Every tier" value={fixed.service_tier} choices={Object.entries(TIER_WORDS)} onChange={(v) => filterBy("service_tier", v)} />
        {fixed.key && (
          <span class="chip" data-testid="key-filter">
            Key: {keyName ?? fixed.key}
            <button type="button" class="link-button" aria-label="Show every key's requests" onClick={() => filterBy("key", undefined)}>
              ✕
            </button>
          </span>
        )}
      </div>
      {page.data && page.data.total === 0 && unfiltered && (
        <EmptyState title="No requests yet">
          <p>
            Requests show here as apps call the gateway with the organization's <Link href="/keys">API keys</Link>.
          </p>
        </EmptyState>
      )}
      {page.data && page.data.total === 0 && !unfiltered && <p class="muted">No request matches.</p>}
      {!(page.data && page.data.total === 0) && <RequestTable rows={page.data?.data ?? []} loading={page.loading && !page.data} hide={fixed.key ? ["key"] : []} />}
    </>
  );
}

/** One of the log's filters: a labelled choice of its values (value, words), "Every …" first. */
function FilterSelect(p: { label: string; of: string; every: string; value: string | undefined; choices: readonly (readonly [string, string])[]; onChange: (value: string | undefined) => void }) {
  return (
    <label class="inline-label">
      <span>{p.label}</span>
      <select aria-label={`Show requests of ${p.of}`} value={p.value ?? ""} onChange={(e) => p.onChange(e.currentTarget.value || undefined)}>
        <option value="">{p.every}</option>
        {p.choices.map(([value, words]) => (
          <option key={value} value={value}>
            {words}
          </option>
        ))}
      </select>
    </label>
  );
}
