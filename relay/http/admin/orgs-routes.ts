import type { OrgRoute } from "../../admin-contract/index.js";
import type { Actor } from "../../auth/index.js";
import type { ControlPlane, SsoView } from "../../control/index.js";
import type { RouteHandlers } from "./mount-routes.js";
import { toWire } from "./to-wire.js";

/** An organization's single sign-on as the admin API says it. */
const ssoWire = (s: SsoView) => {
  const { org_id: _org, ...shown } = toWire(s);
  return shown;
};

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
    "GET /admin/v1/orgs/:org/sso": async ({ params }, actor) => {
      const sso = await control.sso.get(actor, params.org);
      return sso && ssoWire(sso);
    },
    "PUT /admin/v1/orgs/:org/sso": async (input, actor) => {
      const read = () => {
        const b = input.body();
        return { issuer: b.issuer, clientId: b.client_id, clientSecret: b.client_secret, label: b.label, roleClaim: b.role_claim ?? null, adminGroups: b.admin_groups, passwords: b.passwords, breakGlassLogin: b.break_glass_login ?? null };
      };
      return ssoWire(await control.sso.set(actor, input.params.org, read));
    },
    "DELETE /admin/v1/orgs/:org/sso": async ({ params }, actor) => {
      await control.sso.remove(actor, params.org);
      return { deleted: true as const };
    },
  };
}
