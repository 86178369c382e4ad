import type { MachineRoute } from "../../admin-contract/index.js";
import type { Access } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { RouteHandlers } from "./mount-routes.js";
import { toWire } from "./to-wire.js";

/** Machines: listed by anyone of the organization; added, revoked and given new tokens by its admins. */
export function machineRoutes(control: ControlPlane): RouteHandlers<MachineRoute, Access> {
  return {
    "GET /admin/v1/machines": async (input, access) => toWire({ object: "list", data: await control.listMachines(access.org(input.query().org).id) }),
    "GET /admin/v1/machines/:id": async ({ params }, access) => toWire(await control.machine(access.orgScope, params.id)),
    "POST /admin/v1/machines": async (input, access) => {
      access.requireAdmin("add machines");
      const body = input.body();
      const { machine, ...joining } = await control.createMachine(access.org(body.org).id, body.name);
      return toWire({ ...machine, ...joining });
    },
    "POST /admin/v1/machines/:id/revoke": async ({ params }, access) => {
      access.requireAdmin("revoke machines");
      return toWire(await control.revokeMachine(access.orgScope, params.id));
    },
    "POST /admin/v1/machines/:id/rotate-token": async ({ params }, access) => {
      access.requireAdmin("rotate machine tokens");
      const { machine, ...joining } = await control.rotateMachineToken(access.orgScope, params.id);
      return toWire({ ...machine, ...joining });
    },
  };
}
