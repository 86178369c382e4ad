import type { ComponentChildren } from "preact";
import type { Live } from "../api/use-live.js";
import { DataTable, type DataTableProps } from "./data-table.js";
import { ListControls } from "./list-controls.js";
import { toggleSort, type TableState } from "./table-state.js";

/** What a {@link PagedTable} shows: a page of the relay's list, and how many items match. */
export interface ListPage<T> {
  data: T[];
  total: number;
}

/**
 * A list page's body: its search, state filter and pager, then the page of rows the relay sent, sortable by
 * column. An organization with none of these at all sees `empty` (what they are for, the next step) instead
 * of a search box; a search or filter that finds nothing says so; rows on their way show as a skeleton.
 */
export function PagedTable<T, S extends string, St extends string>({
  page,
  table,
  onTable,
  noun,
  one,
  states,
  placeholder,
  empty,
  hideEmpty,
  ...tableProps
}: {
  page: Live<ListPage<T>>;
  table: TableState<S, St>;
  onTable: (t: TableState<S, St>) => void;
  /** What is listed, in the plural ("machines"): for the controls' names. */
  noun: string;
  /** One of them ("machine"), for the words for no match. */
  one: string;
  states: readonly (readonly [St, string])[];
  placeholder: string;
  /** What an organization without any sees. */
  empty: ComponentChildren;
  /** Hides the empty state (a form to add the first one is open). */
  hideEmpty?: boolean;
} & Omit<DataTableProps<T>, "rows" | "loading" | "sorted">) {
  const rows = page.data?.data ?? [];
  /** Nothing searched for nor filtered: an empty list means none at all. */
  const unfiltered = !table.q && !table.state;
  const none = page.data !== undefined && page.data.total === 0;
  if (none && unfiltered) return hideEmpty ? null : <>{empty}</>;
  return (
    <>
      <ListControls label={noun} table={table} onChange={onTable} total={page.data?.total} states={states} placeholder={placeholder} />
      {none ? (
        <p class="muted">No {one} matches.</p>
      ) : (
        <DataTable
          {...tableProps}
          rows={rows}
          loading={page.loading && !page.data}
          sorted={{ sort: table.sort, order: table.order, onSort: (field) => onTable(toggleSort(table, field as S)) }}
        />
      )}
    </>
  );
}
