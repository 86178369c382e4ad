import type { HubRoute } from "../../admin-contract/index.js";
import type { Actor } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { RouteHandlers } from "./mount-routes.js";

/** The model hub, searched for the Forge (the control plane's `hub`). */
export function hubRoutes(control: ControlPlane): RouteHandlers<HubRoute, Actor> {
  return {
    "GET /admin/v1/hub/search": async (input, actor) => {
      const { org, q } = input.query();
      return { object: "list" as const, data: await control.hub.search(actor, org, q) };
    },
    "GET /admin/v1/hub/repos/:owner/:name": async (input, actor) => {
      const { org, machine } = input.query();
      return control.hub.repo(actor, org, `${input.params.owner}/${input.params.name}`, machine);
    },
  };
}
