import type { UsageRoute } from "../../admin-contract/index.js";
import type { Actor } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { RouteHandlers } from "./mount-routes.js";
import { toWire } from "./to-wire.js";

/** Requests and tokens over time, per key or model (the control plane's `activity.usage`). */
export function usageRoutes(control: ControlPlane): RouteHandlers<UsageRoute, Actor> {
  return {
    "GET /admin/v1/usage": async (input, actor) => {
      const { org, range, by } = input.query();
      return toWire({ object: "usage" as const, range, by, ...(await control.activity.usage(actor, org, range, by)) });
    },
  };
}
