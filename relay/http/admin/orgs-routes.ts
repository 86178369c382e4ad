import type { OrgRoute } from "../../admin-contract/index.js";
import type { Actor } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { RouteHandlers } from "./mount-routes.js";
import { toWire } from "./to-wire.js";

/** Organizations (the control plane's `orgs`): those the caller sees, create one, set its default key limits. */
export function orgRoutes(control: ControlPlane): RouteHandlers<OrgRoute, Actor> {
  return {
    "GET /admin/v1/orgs": async (_input, actor) => toWire({ object: "list", data: await control.orgs.list(actor) }),
    "POST /admin/v1/orgs": async (input, actor) => toWire(await control.orgs.create(actor, () => input.body())),
    "PATCH /admin/v1/orgs/:org": async (input, actor) => {
      const limits = () => {
        const body = input.body();
        return { defaultKeyRpm: body.default_key_rpm, defaultKeyTpm: body.default_key_tpm, budget: body.budget };
      };
      return toWire(await control.orgs.setKeyDefaults(actor, input.params.org, limits));
    },
  };
}
