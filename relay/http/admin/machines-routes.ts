import type { MachineRoute } from "../../admin-contract/index.js";
import type { Access } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { RouteHandlers } from "./mount-routes.js";
import { toWire } from "./to-wire.js";
import { pageOf } from "./page-of.js";
import type { AuditRecorder } from "./audit-trail.js";

/** Machines: listed by anyone of the organization; added, revoked and given new tokens by its admins. */
export function machineRoutes(control: ControlPlane, record: AuditRecorder): RouteHandlers<MachineRoute, Access> {
  const target = (m: { id: string; name: string }) => ({ kind: "machine", id: m.id, name: m.name });
  return {
    "GET /admin/v1/machines": async (input, access) => {
      const { org, ...ask } = input.query();
      const machines = toWire(await control.listMachines(access.org(org).id));
      return pageOf(machines, ask, { searched: (m) => [m.name, m.id], state: (m) => (m.revoked_at !== null ? "revoked" : m.state) });
    },
    "GET /admin/v1/machines/:id": async ({ params }, access) => toWire(await control.machine(access.orgScope, params.id)),
    "POST /admin/v1/machines": async (input, access) => {
      access.requireAdmin("add machines");
      const body = input.body();
      const { machine, ...joining } = await control.createMachine(access.org(body.org).id, body.name);
      await record(access, { orgId: machine.orgId, action: "machine.created", target: target(machine) });
      return toWire({ ...machine, ...joining });
    },
    "POST /admin/v1/machines/:id/revoke": async ({ params }, access) => {
      access.requireAdmin("revoke machines");
      const machine = await control.revokeMachine(access.orgScope, params.id);
      await record(access, { orgId: machine.orgId, action: "machine.revoked", target: target(machine) });
      return toWire(machine);
    },
    "POST /admin/v1/machines/:id/rotate-token": async ({ params }, access) => {
      access.requireAdmin("rotate machine tokens");
      const { machine, ...joining } = await control.rotateMachineToken(access.orgScope, params.id);
      await record(access, { orgId: machine.orgId, action: "machine.token_rotated", target: target(machine) });
      return toWire({ ...machine, ...joining });
    },
    "PATCH /admin/v1/machines/:id": async (input, access) => {
      access.requireAdmin("rename machines");
      const before = await control.machine(access.orgScope, input.params.id);
      const machine = await control.renameMachine(access.orgScope, input.params.id, input.body().name);
      await record(access, { orgId: machine.orgId, action: "machine.renamed", target: target(machine), detail: { from: before.name } });
      return toWire(machine);
    },
    "DELETE /admin/v1/machines/:id": async ({ params }, access) => {
      access.requireAdmin("delete machines");
      const machine = await control.deleteMachine(access.orgScope, params.id);
      await record(access, { orgId: machine.orgId, action: "machine.deleted", target: target(machine) });
      return { id: machine.id, deleted: true as const };
    },
  };
}
