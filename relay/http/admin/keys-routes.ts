import { MakinaError } from "../../../proto/index.js";
import type { KeyRoute } from "../../admin-contract/index.js";
import type { Access } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { UsageRecorder } from "../../usage/index.js";
import type { RouteHandlers } from "./mount-routes.js";
import { toWire } from "./to-wire.js";

/** API keys: anyone of the organization lists and makes them; admins revoke any, members their own. */
export function keyRoutes(control: ControlPlane, usage: UsageRecorder): RouteHandlers<KeyRoute, Access> {
  return {
    "GET /admin/v1/keys": async (input, access) => {
      const org = access.org(input.query().org);
      const day = await usage.totalsByKey(org.id, Date.now() - 86_400_000);
      return toWire({ object: "list", data: (await control.listKeys(org.id)).map((k) => ({ ...k, requests_24h: day.get(k.id)?.requests ?? 0, tokens_24h: day.get(k.id)?.tokens ?? 0 })) });
    },
    "POST /admin/v1/keys": async (input, access) => {
      const body = input.body();
      const { key, record } = await control.createKey(access.org(body.org).id, {
        name: body.name ?? null,
        stackIds: body.stacks ?? null,
        machineIds: body.machines ?? null,
        rpm: body.rpm ?? null,
        tpm: body.tpm ?? null,
        createdBy: access.userId,
      });
      return toWire({ ...record, key });
    },
    "POST /admin/v1/keys/:id/revoke": async ({ params }, access) => {
      const key = await control.key(params.id);
      access.see(key.orgId, "API key", params.id, "key");
      if (!access.isAdmin && key.createdBy !== access.userId) throw new MakinaError("permission_denied", "Members can revoke only the keys they created.");
      return toWire(await control.revokeKey(key.id));
    },
  };
}
