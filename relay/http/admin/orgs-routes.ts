import { MakinaError } from "../../../proto/index.js";
import type { OrgRoute } from "../../admin-contract/index.js";
import type { Access } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { RouteHandlers } from "./mount-routes.js";
import { toWire } from "./to-wire.js";
import type { AuditRecorder } from "./audit-trail.js";

/** Organizations: the operator lists and creates them; an organization's admins set its default key limits. */
export function orgRoutes(control: ControlPlane, record: AuditRecorder): RouteHandlers<OrgRoute, Access> {
  return {
    "GET /admin/v1/orgs": async (_input, access) => toWire({ object: "list", data: access.orgScope === null ? await control.listOrgs() : [access.org(undefined)] }),
    "POST /admin/v1/orgs": async (input, access) => {
      if (access.principal.kind !== "operator") throw new MakinaError("permission_denied", "Only the relay's operator (admin token) can create organizations.");
      const org = await control.createOrg(input.body().name);
      await record(access, { orgId: org.id, action: "org.created", target: { kind: "org", id: org.id, name: org.name } });
      return toWire(org);
    },
    "PATCH /admin/v1/orgs/:org": async (input, access) => {
      access.requireAdmin("change the organization's default key limits");
      const org = access.org(input.params.org);
      const body = input.body();
      const changed = await control.setOrgKeyDefaults(org.id, { defaultKeyRpm: body.default_key_rpm, defaultKeyTpm: body.default_key_tpm });
      await record(access, {
        orgId: org.id,
        action: "org.limits_changed",
        target: { kind: "org", id: org.id, name: org.name },
        detail: { default_key_rpm: changed.defaultKeyRpm, default_key_tpm: changed.defaultKeyTpm },
      });
      return toWire(changed);
    },
  };
}
