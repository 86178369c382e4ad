import type { LoggedRequest, RequestRoute } from "../../admin-contract/index.js";
import type { Access } from "../../auth/index.js";
import type { RequestLog, RequestLogEntry } from "../../usage/index.js";
import { MakinaError } from "../../../proto/index.js";
import type { RouteHandlers } from "./mount-routes.js";
import { toWire } from "./to-wire.js";

/** An entry as the admin API lists it: whether it was captured, never what. */
function listed({ orgId: _org, capture: _capture, captureUntil, ...entry }: RequestLogEntry & { keyName: string | null; stackName: string | null }): LoggedRequest {
  return { ...toWire(entry), object: "request", captured: captureUntil !== null, capture_until: captureUntil };
}

/** The request log: an organization's gateway requests, to anyone of it; what a capture kept, to its admins only. */
export function requestRoutes(requests: RequestLog): RouteHandlers<RequestRoute, Access> {
  return {
    "GET /admin/v1/requests": async (input, access) => {
      const { org, stack, key, model, status, q, page, per_page } = input.query();
      const { rows, total } = await requests.list(access.org(org).id, { stackId: stack, keyId: key, model, status, q }, { offset: (page - 1) * per_page, limit: per_page });
      return { object: "list" as const, data: rows.map(listed), total, page, per_page };
    },
    "GET /admin/v1/requests/:id": async ({ params }, access) => {
      const found = await requests.get(params.id);
      if (!found) throw new MakinaError("not_found", `No request '${params.id}' in the request log.`, { param: "id" });
      access.see(found.orgId, "request", params.id, "id");
      const { capture } = found;
      return {
        ...listed(found),
        capture: capture && access.isAdmin ? { messages: capture.messages, answer: capture.answer, tool_calls: capture.toolCalls, truncated: capture.truncated } : null,
      };
    },
  };
}
