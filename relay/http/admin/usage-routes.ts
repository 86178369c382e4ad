import type { UsageRoute } from "../../admin-contract/index.js";
import type { Access } from "../../auth/index.js";
import type { UsageRecorder } from "../../usage/index.js";
import type { RouteHandlers } from "./mount-routes.js";
import { toWire } from "./to-wire.js";

/** Requests and tokens over time, per key or model, for anyone of the organization. */
export function usageRoutes(usage: UsageRecorder): RouteHandlers<UsageRoute, Access> {
  return {
    "GET /admin/v1/usage": async (input, access) => {
      const { org, range, by } = input.query();
      return toWire({ object: "usage" as const, range, by, ...(await usage.series(access.org(org).id, range, by)) });
    },
  };
}
