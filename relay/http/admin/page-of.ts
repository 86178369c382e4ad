import type { MachineLog } from "../../../proto/index.js";
import type { LogPage, Page } from "../../admin-contract/index.js";

/** What a list's query asks: a search, a sort, a state, a page. */
export interface ListAsk<S extends string, St extends string> {
  q?: string;
  sort?: S;
  order?: "asc" | "desc";
  state?: St;
  page: number;
  per_page: number;
}

/** How a list reads its items: the fields a search looks in, and an item's state (for the filter). */
export interface ListShape<T, St extends string> {
  searched: (item: T) => readonly (string | null | undefined)[];
  state: (item: T) => St;
}

/** Sorts texts by their letters whatever their case (digits as numbers), and numbers as numbers; nothing (null) comes last either way. */
function comparer(): (a: unknown, b: unknown) => number {
  // One collator for a whole sort: `localeCompare` with options builds one per comparison.
  const texts = new Intl.Collator("en", { sensitivity: "base", numeric: true });
  return (a, b) => {
    if (a === b) return 0;
    if (a === null || a === undefined) return 1;
    if (b === null || b === undefined) return -1;
    if (typeof a === "number" && typeof b === "number") return a - b;
    return texts.compare(String(a), String(b));
  };
}

/**
 * One page of a list's items (as the wire has them, so `sort` names a field of theirs), searched, filtered and
 * sorted on the relay: a browser gets 100 rows of 10,000, never all of them. Every word of `q` must be found,
 * in any case, in one of the item's `searched` fields. A sort keeps the list's own order among equals.
 */
export function pageOf<T extends object, S extends Extract<keyof T, string>, St extends string>(items: readonly T[], ask: ListAsk<S, St>, shape: ListShape<T, St>): Page<T> {
  const words = (ask.q ?? "").toLowerCase().split(/\s+/).filter(Boolean);
  let found = items.filter((item) => {
    if (ask.state !== undefined && shape.state(item) !== ask.state) return false;
    if (words.length === 0) return true;
    const text = shape.searched(item).filter(Boolean).join("\n").toLowerCase();
    return words.every((w) => text.includes(w));
  });
  if (ask.sort !== undefined) {
    const field = ask.sort;
    const sign = ask.order === "desc" ? -1 : 1;
    const compare = comparer();
    found = found
      .map((item, i) => ({ item, i }))
      .sort((a, b) => {
        const va = a.item[field];
        const vb = b.item[field];
        // Nothing stays last in both orders.
        if ((va === null || va === undefined) !== (vb === null || vb === undefined)) return va === null || va === undefined ? 1 : -1;
        return sign * compare(va, vb) || a.i - b.i;
      })
      .map((x) => x.item);
  } else if (ask.order === "desc") {
    found = [...found].reverse();
  }
  const start = (ask.page - 1) * ask.per_page;
  return { object: "list", data: found.slice(start, start + ask.per_page), total: found.length, page: ask.page, per_page: ask.per_page };
}

/**
 * A page's items made whole: a list sorts and searches light rows (the fields it sorts by, named as the wire
 * names them), and only the page's rows become what the API answers (`whole`), however many items there are.
 */
export async function wholePage<R, T>(page: Page<R>, whole: (rows: R[]) => T[] | Promise<T[]>): Promise<Page<T>> {
  return { ...page, data: await whole(page.data) };
}

/** A machine's log lines as the admin API answers them, with the `after` of the next read. */
export function logPage(read: MachineLog, after: number): LogPage {
  const lines = read.logLines.map((l) => ({ seq: l.seq, at: l.timeMs, level: l.level, text: l.text }));
  return { object: "log", lines, truncated: read.logTruncated, next: lines.at(-1)?.seq ?? after };
}
