/** What a list page asks the relay for: a search, a sort, a state to filter by, and a page. */
export interface TableState<S extends string = string, St extends string = string> {
  q: string;
  /** The field sorted by; null: the list's own order. */
  sort: S | null;
  order: "asc" | "desc";
  /** The state filtered by; null: every state. */
  state: St | null;
  /** From 1. */
  page: number;
  perPage: number;
}

/** A table as it first shows: no search, no filter, the list's own order, the first page of 50. */
export const INITIAL_TABLE: TableState = { q: "", sort: null, order: "asc", state: null, page: 1, perPage: 50 };

/** Sorts by `field`: ascending first, the other way when it is sorted by it already. Back to the first page. */
export function toggleSort<S extends string, St extends string>(t: TableState<S, St>, field: S): TableState<S, St> {
  return { ...t, sort: field, order: t.sort === field && t.order === "asc" ? "desc" : "asc", page: 1 };
}

/** A new search, from the first page. */
export function withSearch<S extends string, St extends string>(t: TableState<S, St>, q: string): TableState<S, St> {
  return q === t.q ? t : { ...t, q, page: 1 };
}

/** Another state filter (null: all), from the first page. */
export function withState<S extends string, St extends string>(t: TableState<S, St>, state: St | null): TableState<S, St> {
  return state === t.state ? t : { ...t, state, page: 1 };
}

/** How many pages `total` items make (at least one, so "page 1 of 1" reads right for none). */
export function pageCount(total: number, perPage: number): number {
  return Math.max(1, Math.ceil(total / perPage));
}

/** Page `page`, kept within the pages there are. */
export function toPage<S extends string, St extends string>(t: TableState<S, St>, page: number, total: number): TableState<S, St> {
  return { ...t, page: Math.min(Math.max(1, page), pageCount(total, t.perPage)) };
}

/** The query the relay's list endpoints take (`q`, `sort`, `order`, `state`, `page`, `per_page`), leaving out what is unset. */
export function queryOf<S extends string, St extends string>(t: TableState<S, St>): { q?: string; sort?: S; order?: "asc" | "desc"; state?: St; page: number; per_page: number } {
  return {
    ...(t.q.trim() && { q: t.q.trim() }),
    ...(t.sort && { sort: t.sort, order: t.order }),
    ...(t.state && { state: t.state }),
    page: t.page,
    per_page: t.perPage,
  };
}

/** Which items a page shows, in words: `51–100 of 1,234`, or `none` when nothing matches. */
export function rangeText(total: number, page: number, perPage: number): string {
  if (total === 0) return "none";
  const first = (page - 1) * perPage + 1;
  const last = Math.min(total, page * perPage);
  const n = (x: number) => x.toLocaleString("en-US");
  return first > total ? `none of ${n(total)} on this page` : `${n(first)}–${n(last)} of ${n(total)}`;
}

/** The table in a page's address (`?q=gpu&sort=name&order=desc&state=online&page=2`), so a view can be shared and reloaded. */
export function toSearch(t: TableState): string {
  const p = new URLSearchParams();
  if (t.q) p.set("q", t.q);
  if (t.sort) {
    p.set("sort", t.sort);
    p.set("order", t.order);
  }
  if (t.state) p.set("state", t.state);
  if (t.page > 1) p.set("page", String(t.page));
  const s = p.toString();
  return s ? `?${s}` : "";
}

/** The table an address holds; what it does not say (or says wrong) is the initial table's. */
export function fromSearch<S extends string, St extends string>(search: string, sorts: readonly S[], states: readonly St[]): TableState<S, St> {
  const p = new URLSearchParams(search);
  const sort = p.get("sort");
  const state = p.get("state");
  const page = Number(p.get("page"));
  return {
    ...INITIAL_TABLE,
    q: (p.get("q") ?? "").slice(0, 200),
    sort: sorts.find((s) => s === sort) ?? null,
    order: p.get("order") === "desc" ? "desc" : "asc",
    state: states.find((s) => s === state) ?? null,
    page: Number.isInteger(page) && page > 1 ? page : 1,
  };
}
