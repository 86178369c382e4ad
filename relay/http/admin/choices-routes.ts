import type { ChoiceRoute } from "../../admin-contract/index.js";
import type { Access } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { RouteHandlers } from "./mount-routes.js";

/** What forms choose from: the organization's stacks and machines by name, for anyone of it. */
export function choiceRoutes(control: ControlPlane): RouteHandlers<ChoiceRoute, Access> {
  return {
    "GET /admin/v1/choices": async (input, access) => {
      const org = access.org(input.query().org);
      const { machines, stacks } = await control.fleetOf(org.id);
      return {
        object: "choices" as const,
        stacks: stacks.map((s) => ({ id: s.id, name: s.name, model_id: s.modelId, machine_id: s.machineId, runtime: s.runtime, state: s.state })),
        machines: machines.map((m) => ({ id: m.id, name: m.name, state: m.state, revoked: m.revokedAt !== null })),
      };
    },
  };
}
