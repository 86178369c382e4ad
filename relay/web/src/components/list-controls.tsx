import { useEffect, useState } from "preact/hooks";
import { pageCount, rangeText, toPage, withSearch, withState, type TableState } from "./table-state.js";

/** A list's search box, state filter and pager, above its table. The search is sent once typing pauses. */
export function ListControls<S extends string, St extends string>({
  label,
  table,
  onChange,
  total,
  states,
  placeholder,
  everyState = "Every state",
  stateLabel = "state",
}: {
  /** What is listed, for the controls' names ("keys"). */
  label: string;
  table: TableState<S, St>;
  onChange: (t: TableState<S, St>) => void;
  /** How many items match; undefined while the first page loads. */
  total: number | undefined;
  /** The states to filter by, with their words (none: no filter). */
  states: readonly (readonly [St, string])[];
  placeholder: string;
  /** The filter's words for no filter. */
  everyState?: string;
  /** What the filter filters by ("state", "status"). */
  stateLabel?: string;
}) {
  const [typed, setTyped] = useState(table.q);
  useEffect(() => setTyped(table.q), [table.q]);
  useEffect(() => {
    if (typed === table.q) return;
    const timer = setTimeout(() => onChange(withSearch(table, typed)), 200);
    return () => clearTimeout(timer);
  }, [typed, table, onChange]);
  const pages = pageCount(total ?? 0, table.perPage);
  return (
    <div class="list-controls" role="search" aria-label={`Find ${label}`}>
      <input type="search" aria-label={`Search ${label}`} placeholder={placeholder} value={typed} onInput={(e) => setTyped(e.currentTarget.value)} maxLength={200} />
      {states.length > 0 && (
        <select aria-label={`Show ${label} by ${stateLabel}`} value={table.state ?? ""} onChange={(e) => onChange(withState(table, states.find(([v]) => v === e.currentTarget.value)?.[0] ?? null))}>
          <option value="">{everyState}</option>
          {states.map(([value, words]) => (
            <option key={value} value={value}>
              {words}
            </option>
          ))}
        </select>
      )}
      <span class="muted small" aria-live="polite" data-testid="list-range">
        {total === undefined ? "Loading…" : rangeText(total, table.page, table.perPage)}
      </span>
      {total !== undefined && pages > 1 && (
        <span class="pager">
          <button type="button" class="button small secondary" disabled={table.page <= 1} onClick={() => onChange(toPage(table, table.page - 1, total))}>
            Previous
          </button>
          <span class="small">
            Page {table.page} of {pages}
          </span>
          <button type="button" class="button small secondary" disabled={table.page >= pages} onClick={() => onChange(toPage(table, table.page + 1, total))}>
            Next
          </button>
        </span>
      )}
    </div>
  );
}
