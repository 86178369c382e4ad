import { useCallback, useState } from "preact/hooks";
import { fromSearch, toSearch, type TableState } from "../components/table-state.js";

/** The styles' narrow layout (styles.css), where table rows become cards. */
const NARROW = "(max-width: 860px)";

/**
 * A list page's table (search, sort, state filter, page), kept in the page's address: a view can be reloaded
 * and shared, and Back leaves the page rather than undoing a sort. The parameters named in `keep` stay in the address.
 */
export function useTableState<S extends string, St extends string>(sorts: readonly S[], states: readonly St[], keep: readonly string[] = []): [TableState<S, St>, (t: TableState<S, St>) => void] {
  // A phone shows each row as a card a screen tall: ten of them to a page rather than fifty.
  const [table, setTable] = useState(() => ({ ...fromSearch(location.search, sorts, states), ...(matchMedia(NARROW).matches && { perPage: 10 }) }));
  const set = useCallback((next: TableState<S, St>) => {
    setTable(next);
    // The page's own parameters of the address (a filter it was linked with) stay as they are.
    const kept = new URLSearchParams(toSearch(next));
    const now = new URLSearchParams(location.search);
    for (const name of keep) if (now.has(name)) kept.set(name, now.get(name)!);
    const search = kept.toString();
    history.replaceState(history.state, "", location.pathname + (search ? `?${search}` : ""));
  }, []);
  return [table, set];
}
