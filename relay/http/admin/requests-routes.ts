import type { RequestRoute } from "../../admin-contract/index.js";
import type { Access } from "../../auth/index.js";
import type { RequestLog } from "../../usage/index.js";
import { MakinaError } from "../../../proto/index.js";
import type { RouteHandlers } from "./mount-routes.js";
import { toWire } from "./to-wire.js";

/** The request log: an organization's gateway requests, to anyone of it; what a capture kept, to its admins only. */
export function requestRoutes(requests: RequestLog): RouteHandlers<RequestRoute, Access> {
  return {
    "GET /admin/v1/requests": async (input, access) => {
      const { org, stack, key, model, status, q, page, per_page } = input.query();
      const { rows, total } = await requests.list(access.org(org).id, { stackId: stack, keyId: key, model, status, q }, { offset: (page - 1) * per_page, limit: per_page });
      return {
        object: "list" as const,
        data: rows.map(({ orgId: _org, capture: _capture, captureUntil, ...r }) => ({ ...toWire(r), object: "request" as const, captured: captureUntil !== null, capture_until: captureUntil })),
        total,
        page,
        per_page,
      };
    },
    "GET /admin/v1/requests/:id": async ({ params }, access) => {
      const found = /^req_[a-z0-9]{16}$/.test(params.id) ? await requests.get(params.id) : undefined;
      if (!found) throw new MakinaError("not_found", `No request '${params.id}' in the request log.`, { param: "id" });
      access.see(found.orgId, "request", params.id, "id");
      const { orgId: _org, capture, captureUntil, ...r } = found;
      return {
        ...toWire(r),
        object: "request" as const,
        captured: captureUntil !== null,
        capture_until: captureUntil,
        capture: capture && access.isAdmin ? { messages: capture.messages, answer: capture.answer, tool_calls: capture.toolCalls, truncated: capture.truncated } : null,
      };
    },
  };
}
