import type { ExportRoute, LoggedRequest, RequestRoute } from "../../admin-contract/index.js";
import type { Actor } from "../../auth/index.js";
import type { ControlPlane, ListedRequest } from "../../control/index.js";
import type { RouteHandlers } from "./mount-routes.js";
import { toWire } from "./to-wire.js";

/** An entry as the admin API lists it: whether it was captured, never what. */
function listed({ orgId: _org, capture: _capture, captureUntil, ...entry }: ListedRequest): LoggedRequest {
  return { ...toWire(entry), object: "request", captured: captureUntil !== null, capture_until: captureUntil };
}

/** The request log (the control plane's `activity`): a page of an organization's gateway requests, and one with what its capture kept. */
export function requestRoutes(control: ControlPlane): RouteHandlers<Exclude<RequestRoute, ExportRoute>, Actor> {
  return {
    "GET /admin/v1/requests": async (input, actor) => {
      const { org, stack, key, model, status, q, api, service_tier, page, per_page } = input.query();
      const { rows, total } = await control.activity.requests(actor, org, { stackId: stack, keyId: key, model, status, q, api, serviceTier: service_tier }, { offset: (page - 1) * per_page, limit: per_page });
      return { object: "list" as const, data: rows.map(listed), total, page, per_page };
    },
    "GET /admin/v1/requests/:id": async ({ params }, actor) => {
      const { captureVisible, ...found } = await control.activity.request(actor, params.id);
      const { capture } = found;
      return {
        ...listed(found),
        capture: capture && captureVisible ? { messages: capture.messages, answer: capture.answer, tool_calls: capture.toolCalls, truncated: capture.truncated } : null,
      };
    },
  };
}
