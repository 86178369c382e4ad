import type { ChoiceRoute } from "../../admin-contract/index.js";
import type { Actor } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { RouteHandlers } from "./mount-routes.js";

/** What forms choose from: the organization's stacks and machines by name (the control plane's `activity.fleet`). */
export function choiceRoutes(control: ControlPlane): RouteHandlers<ChoiceRoute, Actor> {
  return {
    "GET /admin/v1/choices": async (input, actor) => {
      const { machines, stacks } = await control.activity.fleet(actor, input.query().org);
      return {
        object: "choices" as const,
        stacks: stacks.map((s) => ({ id: s.id, name: s.name, model_id: s.modelId, machine_id: s.machineId, runtime: s.runtime, state: s.state })),
        machines: machines.map((m) => ({ id: m.id, name: m.name, state: m.state, revoked: m.revokedAt !== null })),
      };
    },
  };
}
