import type { StackRoute } from "../../admin-contract/index.js";
import type { Access } from "../../auth/index.js";
import { MODEL_CATALOG } from "../../compatibility/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { RouteHandlers } from "./mount-routes.js";
import { fromWire, toWire } from "./to-wire.js";

/** Stacks: built, checked, deployed and undeployed by the organization's admins; seen by all of it. */
export function stackRoutes(control: ControlPlane): RouteHandlers<StackRoute, Access> {
  return {
    "GET /admin/v1/stacks": ({ query }, access) => toWire({ object: "list", data: control.listStacks(access.org(query.org).id) }),
    "GET /admin/v1/stacks/:id": ({ params }, access) => toWire(control.stack(params.id, access.orgScope)),
    "POST /admin/v1/stacks": async ({ body }, access) => {
      access.requireAdmin("create stacks");
      return toWire(await control.createStack({ ...fromWire(body), org: access.org(body.org).id }));
    },
    "POST /admin/v1/compatibility": async ({ body }, access) => toWire(await control.checkPlan({ ...fromWire(body), org: access.org(body.org).id })),
    "GET /admin/v1/catalog": () => toWire({ object: "list", data: MODEL_CATALOG.map(({ facts, ...m }) => ({ ...m, sizeBytes: facts.weightsBytes })) }),
    "POST /admin/v1/stacks/:id/deploy": async ({ params }, access) => {
      access.requireAdmin("deploy stacks");
      return toWire(await control.deploy(params.id, access.orgScope));
    },
    "POST /admin/v1/stacks/:id/undeploy": async ({ params }, access) => {
      access.requireAdmin("undeploy stacks");
      return toWire(await control.undeploy(params.id, access.orgScope));
    },
  };
}
