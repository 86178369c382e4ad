import type { ComponentChildren } from "preact";
import { Link } from "./link.js";

/** One column of a {@link DataTable}. */
export interface Column<T> {
  header: string;
  /** Shown to screen readers only (an actions column). */
  hideHeader?: boolean;
  cell: (row: T) => ComponentChildren;
  /** The cells' class: `muted`, `small`, `mono`, `wrap`, `row-actions`. */
  class?: string;
  /** A test id for each of the column's cells. */
  testId?: (row: T) => string;
  /** The field the relay sorts this column by: its header becomes a button that sorts. */
  sort?: string;
}

/** Options of a {@link DataTable}. */
export interface DataTableProps<T> {
  /** What the table lists, for screen readers (`aria-label`). */
  label: string;
  columns: Column<T>[];
  rows: readonly T[];
  /** Each row's key (its id). */
  rowKey: (row: T) => string;
  rowTestId?: (row: T) => string;
  rowClass?: (row: T) => string;
  testId?: string;
  /** Without the card around it, for a table inside a card. */
  flat?: boolean;
  /** How the rows are sorted, and what a sortable header's click asks for. */
  sorted?: { sort: string | null; order: "asc" | "desc"; onSort: (field: string) => void };
  /** Rows are on their way: the table shows placeholder rows (a skeleton) rather than nothing. */
  loading?: boolean;
}

/** The list pages' table: a header row, then one row per item; in a narrow window each row is a card whose cells carry their column's name. */
export function DataTable<T>({ label, columns, rows, rowKey, rowTestId, rowClass, testId, flat, sorted, loading }: DataTableProps<T>) {
  const ariaSort = (c: Column<T>) => (sorted && c.sort && sorted.sort === c.sort ? (sorted.order === "asc" ? "ascending" : "descending") : undefined);
  return (
    <div class={flat ? "table-wrap flat" : "table-wrap"}>
      <table class="table" aria-label={label} data-testid={testId}>
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c.header} scope="col" aria-sort={ariaSort(c)}>
                {c.hideHeader ? (
                  <span class="sr-only">{c.header}</span>
                ) : sorted && c.sort ? (
                  <button type="button" class="sort" onClick={() => sorted.onSort(c.sort!)}>
                    {c.header}
                    <span aria-hidden="true" class={ariaSort(c) ? "" : "sortable"}>
                      {ariaSort(c) === "ascending" ? " ▲" : ariaSort(c) === "descending" ? " ▼" : " ↕"}
                    </span>
                  </button>
                ) : (
                  c.header
                )}
              </th>
            ))}
          </tr>
        </thead>
        <tbody aria-busy={loading ? "true" : undefined}>
          {loading &&
            rows.length === 0 &&
            [0, 1, 2].map((i) => (
              <tr key={`skeleton-${i}`} class="skeleton" aria-hidden="true">
                {columns.map((c) => (
                  <td key={c.header}>
                    <span class="skeleton-bar" />
                  </td>
                ))}
              </tr>
            ))}
          {rows.map((row) => (
            <tr key={rowKey(row)} data-testid={rowTestId?.(row)} class={rowClass?.(row)}>
              {columns.map((c) => (
                <td key={c.header} class={c.class} data-testid={c.testId?.(row)} data-label={c.hideHeader ? undefined : c.header}>
                  {c.cell(row)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A row's name linking to its page, with its id (or key prefix) beneath. */
export function NameCell({ href, name, id }: { href?: string; name: ComponentChildren; id: string }) {
  return (
    <>
      {href ? <Link href={href}>{name}</Link> : name}
      <div class="muted mono small">{id}</div>
    </>
  );
}
