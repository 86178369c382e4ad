import type { UsageRoute } from "../../admin-contract/index.js";
import type { Actor } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { RouteHandlers } from "./mount-routes.js";
import { pageOf } from "./page-of.js";
import { toWire } from "./to-wire.js";

/**
 * Requests and tokens over time, per key or model (the control plane's `activity.usage`): the busiest groups'
 * series, and one page of every group's totals, searched by name or id and sorted on the relay.
 */
export function usageRoutes(control: ControlPlane): RouteHandlers<UsageRoute, Actor> {
  return {
    "GET /admin/v1/usage": async (input, actor) => {
      const { org, range, by, q, sort, order, page, per_page } = input.query();
      const { totals, ...usage } = await control.activity.usage(actor, org, range, by);
      // Flat rows, so the list sorts by a count as by any field (the busiest first is the list's own order); a
      // model is searched by its id, a key by its name and id.
      const rows = totals.map((t) => ({
        t,
        name: t.name ?? (by === "model" ? t.group : null),
        requests: t.total.requests,
        errors: t.total.errors,
        prompt_tokens: t.total.promptTokens,
        completion_tokens: t.total.completionTokens,
      }));
      // Every match, sorted: the page is cut from it, and the sum is of all of it.
      const found = pageOf(rows, { q, sort, order, page: 1, per_page: Math.max(1, rows.length) }, { searched: (r) => [r.name, r.t.group], state: () => "used" as const }).data;
      const sum = { requests: 0, errors: 0, promptTokens: 0, completionTokens: 0, priorityRequests: 0, flexRequests: 0 };
      for (const { t } of found) for (const k of Object.keys(sum) as (keyof typeof sum)[]) sum[k] += t.total[k];
      const first = (page - 1) * per_page;
      return toWire({ object: "usage" as const, range, by, ...usage, totals: found.slice(first, first + per_page).map((r) => r.t), total: found.length, page, per_page, sum });
    },
  };
}
