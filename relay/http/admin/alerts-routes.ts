import type { AlertRoute } from "../../admin-contract/index.js";
import type { Actor } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { RouteHandlers } from "./mount-routes.js";
import { toWire } from "./to-wire.js";

/** Alert webhooks (the control plane's `alerts`): list, add, change, remove, test, and their deliveries. */
export function alertRoutes(control: ControlPlane): RouteHandlers<AlertRoute, Actor> {
  return {
    "GET /admin/v1/alerts": async (input, actor) => toWire({ object: "list", data: await control.alerts.list(actor, input.query().org) }),
    "POST /admin/v1/alerts": async (input, actor) => {
      const b = input.body();
      const { webhook, secret } = await control.alerts.create(actor, b.org, { name: b.name ?? null, url: b.url, events: b.events, machineOfflineAfterS: b.machine_offline_after_s, errorRatePercent: b.error_rate_percent });
      return toWire({ ...webhook, secret });
    },
    "PATCH /admin/v1/alerts/:id": async (input, actor) => {
      const changes = () => {
        const b = input.body();
        return { name: b.name, url: b.url, events: b.events, machineOfflineAfterS: b.machine_offline_after_s, errorRatePercent: b.error_rate_percent };
      };
      return toWire(await control.alerts.update(actor, input.params.id, changes));
    },
    "DELETE /admin/v1/alerts/:id": async ({ params }, actor) => {
      await control.alerts.delete(actor, params.id);
      return { id: params.id, deleted: true as const };
    },
    "POST /admin/v1/alerts/:id/test": async ({ params }, actor) => {
      await control.alerts.test(actor, params.id);
      return { id: params.id, queued: true as const };
    },
    "GET /admin/v1/alerts/:id/deliveries": async (input, actor) => {
      const { page, per_page } = input.query();
      const { deliveries, total } = await control.alerts.deliveries(actor, input.params.id, { limit: per_page, offset: (page - 1) * per_page });
      const data = deliveries.map(({ webhookId: _w, orgId: _o, ...d }) => toWire(d));
      return { object: "list" as const, data, total, page, per_page };
    },
  };
}
