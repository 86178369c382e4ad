import { AUDIT_ACTIONS, type AuditAction, type AuditRoute, type ExportRoute } from "../../admin-contract/index.js";
import type { Actor } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { RouteHandlers } from "./mount-routes.js";

/** The audit log (the control plane's `activity.audit`), newest first, a page at a time. */
export function auditRoutes(control: ControlPlane): RouteHandlers<Exclude<AuditRoute, ExportRoute>, Actor> {
  return {
    "GET /admin/v1/audit": async (input, actor) => {
      const query = input.query();
      // One more than asked: whether there is a next page.
      const actions = query.action === undefined ? undefined : AUDIT_ACTIONS.filter((a) => a === query.action || a.startsWith(`${query.action}.`));
      const events = await control.activity.audit(actor, query.org, { limit: query.limit + 1, before: query.before, actions, actor: query.actor, target: query.target, since: query.since, until: query.until });
      const page = events.slice(0, query.limit);
      return {
        object: "list",
        data: page.map((e) => ({ id: e.id, object: "audit_event" as const, at: e.at, action: e.action as AuditAction, outcome: e.outcome, actor: e.actor, address: e.address, target: e.target, detail: e.detail })),
        next: events.length > query.limit ? page[page.length - 1]!.id : null,
      };
    },
  };
}
