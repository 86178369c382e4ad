import type { OverviewRoute } from "../../admin-contract/index.js";
import type { Actor } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { RouteHandlers } from "./mount-routes.js";

/** The overview of an organization, one of its machines or one stack (the control plane's `overview`). */
export function overviewRoutes(control: ControlPlane): RouteHandlers<OverviewRoute, Actor> {
  return {
    "GET /admin/v1/overview": (input, actor) => control.overview(actor, input.query()),
  };
}
