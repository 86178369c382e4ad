import { z } from "zod";
import { must } from "./fields.js";

/** A list answer, as the gateway's lists read. */
export interface List<T> {
  object: "list";
  data: T[];
}

/** One page of a list: `total` items match the search and filter, `data` holds page `page` of them, `per_page` at most. */
export interface Page<T> extends List<T> {
  total: number;
  page: number;
  per_page: number;
}

/** The most a page holds (and what it holds when `per_page` is not given: 100). */
export const MAX_PER_PAGE = 1000;
const PAGE = must("an integer of at least 1");
const PER_PAGE = must(`an integer from 1 to ${MAX_PER_PAGE}`);

/**
 * The query of a list that searches, sorts, filters by state and pages, on the relay: `q` (words each found in
 * one of the item's names or ids, any case), `sort` (one of `sorts`; the list's own order when absent), `order`
 * (`asc` or `desc`), `state` (one of `states`), `page` (from 1) and `per_page` (1 to 1,000, 100 by default).
 */
export function listQuery<S extends readonly [string, ...string[]], St extends readonly [string, ...string[]]>(sorts: S, states: St) {
  return {
    q: z.string(must("a string")).max(200, must("at most 200 characters")).optional(),
    sort: z.enum(sorts, must(`one of ${sorts.join(", ")}`)).optional(),
    order: z.enum(["asc", "desc"], must("asc or desc")).optional(),
    state: z.enum(states, must(`one of ${states.join(", ")}`)).optional(),
    page: z.coerce.number(PAGE).int(PAGE).min(1, PAGE).default(1),
    per_page: z.coerce.number(PER_PAGE).int(PER_PAGE).min(1, PER_PAGE).max(MAX_PER_PAGE, PER_PAGE).default(100),
  };
}
