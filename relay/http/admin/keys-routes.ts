import type { KeyRoute } from "../../admin-contract/index.js";
import type { Actor } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { RouteHandlers } from "./mount-routes.js";
import { toWire } from "./to-wire.js";

/** API keys (the control plane's `keys`): a page of them, make, change, revoke. */
export function keyRoutes(control: ControlPlane): RouteHandlers<KeyRoute, Actor> {
  return {
    "GET /admin/v1/keys": async (input, actor) => {
      const { org, q, sort, order = "asc", state, page, per_page } = input.query();
      const { keys, total } = await control.keys.page(actor, org, { q, sort, order, state, offset: (page - 1) * per_page, limit: per_page });
      const data = keys.map(({ requests, tokens, ...k }) => ({ ...toWire(k), requests_24h: requests, tokens_24h: tokens }));
      return { object: "list" as const, data, total, page, per_page };
    },
    "POST /admin/v1/keys": async (input, actor) => {
      const b = input.body();
      const { key, record } = await control.keys.create(actor, b.org, { name: b.name, stackIds: b.stacks, machineIds: b.machines, rpm: b.rpm, tpm: b.tpm, expiresAt: b.expires_at, serviceTier: b.service_tier, budget: b.budget });
      return toWire({ ...record, key });
    },
    "PATCH /admin/v1/keys/:id": async (input, actor) => {
      const edit = () => {
        const b = input.body();
        return { name: b.name, stackIds: b.stacks, machineIds: b.machines, rpm: b.rpm, tpm: b.tpm, expiresAt: b.expires_at, serviceTier: b.service_tier, budget: b.budget };
      };
      return toWire(await control.keys.update(actor, input.params.id, edit));
    },
    "POST /admin/v1/keys/:id/revoke": async ({ params }, actor) => toWire(await control.keys.revoke(actor, params.id)),
    "POST /admin/v1/keys/:id/block": async ({ params }, actor) => toWire(await control.keys.setBlocked(actor, params.id, true)),
    "POST /admin/v1/keys/:id/unblock": async ({ params }, actor) => toWire(await control.keys.setBlocked(actor, params.id, false)),
    "POST /admin/v1/keys/:id/regenerate": async (input, actor) => {
      const { key, record } = await control.keys.regenerate(actor, input.params.id, input.body().grace_s);
      return toWire({ ...record, key });
    },
  };
}
