import type { UsageRoute } from "../../admin-contract/index.js";
import type { Access } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { UsageRecorder } from "../../usage/index.js";
import type { RouteHandlers } from "./mount-routes.js";
import { toWire } from "./to-wire.js";

/** Requests and tokens over time, per key or model, for anyone of the organization. */
export function usageRoutes(usage: UsageRecorder, control: ControlPlane): RouteHandlers<UsageRoute, Access> {
  return {
    "GET /admin/v1/usage": async (input, access) => {
      const { org, range, by } = input.query();
      const { series, totals, ...rest } = await usage.series(access.org(org).id, range, by);
      // A key is shown by its name, however many keys the organization has (a browser never needs all of them).
      const names = by === "key" ? await control.keyNames(totals.map((t) => t.group)) : new Map<string, string>();
      const named = <T extends { group: string }>(g: T) => ({ ...g, name: names.get(g.group) ?? null });
      return toWire({ object: "usage" as const, range, by, ...rest, series: series.map(named), totals: totals.map(named) });
    },
  };
}
