import type { MachineRoute } from "../../admin-contract/index.js";
import type { Actor } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { RouteHandlers } from "./mount-routes.js";
import { toWire } from "./to-wire.js";
import { logPage, pageOf } from "./page-of.js";

/** Machines (the control plane's `machines`): a page of them, one, add, revoke, new token, rename, delete. */
export function machineRoutes(control: ControlPlane): RouteHandlers<MachineRoute, Actor> {
  return {
    "GET /admin/v1/machines": async (input, actor) => {
      const { org, ...ask } = input.query();
      const machines = toWire(await control.machines.list(actor, org));
      return pageOf(machines, ask, { searched: (m) => [m.name, m.id], state: (m) => (m.revoked_at !== null ? "revoked" : m.state) });
    },
    "GET /admin/v1/machines/:id": async ({ params }, actor) => toWire(await control.machines.get(actor, params.id)),
    "POST /admin/v1/machines": async (input, actor) => {
      const { machine, ...joining } = await control.machines.create(actor, () => input.body());
      return toWire({ ...machine, ...joining });
    },
    "POST /admin/v1/machines/:id/revoke": async ({ params }, actor) => toWire(await control.machines.revoke(actor, params.id)),
    "GET /admin/v1/machines/:id/log": async (input, actor) => {
      const { after, limit } = input.query();
      return logPage(await control.machines.log(actor, input.params.id, after, limit), after);
    },
    "POST /admin/v1/machines/:id/rotate-token": async ({ params }, actor) => {
      const { machine, ...joining } = await control.machines.rotateToken(actor, params.id);
      return toWire({ ...machine, ...joining });
    },
    "PATCH /admin/v1/machines/:id": async (input, actor) => toWire(await control.machines.rename(actor, input.params.id, () => input.body())),
    "DELETE /admin/v1/machines/:id": async ({ params }, actor) => {
      const machine = await control.machines.delete(actor, params.id);
      return { id: machine.id, deleted: true as const };
    },
  };
}
