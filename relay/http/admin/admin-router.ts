import { Router } from "express";
import type { AdminRoute, EventRoute, SessionRoute } from "../../admin-contract/index.js";
import type { Access, OrgFinder, WebSessions } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { EventBus } from "../../events/index.js";
import type { RequestLog, UsageRecorder } from "../../usage/index.js";
import { jsonBody } from "../json-body.js";
import { accessOf, adminAuth } from "./admin-auth.js";
import { isAdminToken, requestBearer } from "../auth/request-auth.js";
import type { AuditLog } from "../../audit/index.js";
import { auditRoutes } from "./audit-routes.js";
import { auditTrail } from "./audit-trail.js";
import { EventStreams } from "./event-stream.js";
import { keyRoutes } from "./keys-routes.js";
import { machineRoutes } from "./machines-routes.js";
import { mountRoutes, mountStreams, type RouteHandlers, type StreamHandler } from "./mount-routes.js";
import { orgRoutes } from "./orgs-routes.js";
import { stackRoutes } from "./stacks-routes.js";
import { usageRoutes } from "./usage-routes.js";
import { choiceRoutes } from "./choices-routes.js";
import { requestRoutes } from "./requests-routes.js";
import { overviewRoutes, type LoadsOf } from "./overview-routes.js";
import { userRoutes } from "./users-routes.js";

/** Dependencies of the admin API. */
export interface AdminRouterDeps {
  control: ControlPlane;
  /** Organizations by id or slug, from memory. */
  findOrg: OrgFinder;
  sessions: WebSessions;
  audit: AuditLog;
  events: EventBus;
  usage: UsageRecorder;
  requests: RequestLog;
  /** The machines' latest loads, wherever they are linked. */
  loadsOf: LoadsOf;
  adminTokenHash: () => string | undefined;
  /** How often a live event stream sends a keepalive and checks its holder again. @default 15000 */
  eventsKeepaliveMs?: number;
}

/**
 * The admin API (`/admin/v1`), used by the CLI (admin token) and the web application (session cookie): every
 * route of the admin contract but sign-in's, each resource's handlers in a file of their own.
 */
export function adminRouter(deps: AdminRouterDeps): Router {
  const { control } = deps;
  const r = Router();
  r.use("/admin/v1", adminAuth(deps), ...jsonBody(1024 * 1024));
  const record = auditTrail(deps.audit);
  const handlers: RouteHandlers<Exclude<AdminRoute, SessionRoute | EventRoute>, Access> = {
    ...orgRoutes(control, record),
    ...machineRoutes(control, record),
    ...stackRoutes(control, record),
    ...keyRoutes(control, deps.usage, record),
    ...userRoutes(control, deps.sessions, record),
    ...usageRoutes(deps.usage, control),
    ...auditRoutes(control),
    ...requestRoutes(deps.requests),
    ...overviewRoutes(control, deps.requests, deps.loadsOf),
    ...choiceRoutes(control),
  };
  mountRoutes(r, "/admin/v1/", handlers, accessOf);
  const live = new EventStreams(deps.events, { keepaliveMs: deps.eventsKeepaliveMs });
  deps.sessions.onEnded((sessionHash) => live.endFor(sessionHash));
  deps.sessions.onUserEnded((userId) => live.endForUser(userId));
  const streams: { [K in EventRoute]: StreamHandler<K, Access> } = {
    // A user gets its own organization's changes; the operator every organization's, or the one it names.
    "GET /admin/v1/events": (input, access, res) => {
      // A user naming an organization must name its own (another answers 404, as every admin route does).
      const org = input.query().org;
      const named = org === undefined || org === null || org === "" ? null : access.org(org).id;
      const orgId = access.orgScope ?? named;
      const filter = (e: { orgId: string }) => orgId === null || e.orgId === orgId;
      const { principal } = access;
      if (principal.kind === "user") {
        live.stream(res, filter, { session: principal.sessionHash, user: principal.user.id }, () => deps.sessions.isLive(principal.sessionHash));
      } else {
        // The operator's stream holds while its admin token does.
        const bearer = requestBearer(res.req) ?? "";
        live.stream(res, filter, { session: "operator", user: "operator" }, async () => isAdminToken(bearer, deps.adminTokenHash));
      }
    },
  };
  mountStreams(r, "/admin/v1/", streams, accessOf);
  return r;
}
