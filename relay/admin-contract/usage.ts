import { z } from "zod";
import { answer, route } from "./route.js";
import { orgRef, says } from "./fields.js";
import { listQuery } from "./list.js";

/** What the usage totals sort by: a group's name, or one of its counts (the busiest first when none is named). */
export const USAGE_SORTS = ["name", "requests", "errors", "prompt_tokens", "completion_tokens"] as const;

/** Requests and tokens in one bucket of time (or in all of them, without `start`). */
export interface UsagePoint {
  /** The bucket's start, Unix ms. */
  start: number;
  requests: number;
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  /** Of the requests, those of the `priority` and of the `flex` service tier, served or refused once they had it (the rest: `default`, or refused before). */
  priority_requests: number;
  flex_requests: number;
}

/** What one key or model served, bucket by bucket. */
export interface UsageSeries {
  /** The key's id or the model id; `other` for the rest beyond the busiest. */
  group: string;
  /** By key: the key's name (its prefix and `…` when unnamed); null by model, for `other`, and for a key that is gone. */
  name: string | null;
  points: UsagePoint[];
  total: Omit<UsagePoint, "start">;
}

/** Requests and tokens over time, per key or per model. */
export interface Usage {
  object: "usage";
  range: "24h" | "30d";
  by: "key" | "model";
  /** A bucket's length: an hour over 24h, a day over 30d. */
  bucket_ms: number;
  start: number;
  /** The busiest groups, and `other` for the rest. */
  series: UsageSeries[];
  /**
   * One page of every group's totals (the busiest first unless `sort` says otherwise): those whose name or id
   * holds every word of `q`. Paged, searched and sorted on the relay, however many keys an organization has.
   */
  totals: { group: string; name: string | null; total: Omit<UsagePoint, "start"> }[];
  /** How many groups (keys or models) were used in the range. */
  groups: number;
  /** How many of them match `q` (all of them without one): the pages `totals` is one of. */
  total: number;
  page: number;
  per_page: number;
  /** The matching groups' totals added up. */
  sum: Omit<UsagePoint, "start">;
}

const { q, sort, order, page, per_page } = listQuery(USAGE_SORTS, ["used"]);

export const USAGE_ROUTES = {
  "GET /admin/v1/usage": route({
    query: z.strictObject({
      org: orgRef(),
      /** @default "24h" */
      range: z.enum(["24h", "30d"], says("'range' must be 24h or 30d.")).default("24h"),
      /** @default "key" */
      by: z.enum(["key", "model"], says("'by' must be key or model.")).default("key"),
      q,
      sort,
      order,
      page,
      per_page,
    }),
    response: answer<Usage>(),
  }),
} as const;
