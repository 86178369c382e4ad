import { alertRoutes } from "./alerts-routes.js";
import { Router } from "express";
import type { AdminRoute, EventRoute, ExportRoute, SessionRoute } from "../../admin-contract/index.js";
import type { Actor, WebSessions } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { EventBus } from "../../events/index.js";
import { jsonBody } from "../json-body.js";
import { actorOf, adminAuth } from "./admin-auth.js";
import { isAdminToken, requestBearer } from "../auth/request-auth.js";
import { auditRoutes } from "./audit-routes.js";
import { EventStreams } from "./event-stream.js";
import { exportRoutes } from "./export-routes.js";
import { keyRoutes } from "./keys-routes.js";
import { machineRoutes } from "./machines-routes.js";
import { hubRoutes } from "./hub-routes.js";
import { mountRoutes, mountStreams, type RouteHandlers, type StreamHandler } from "./mount-routes.js";
import { orgRoutes } from "./orgs-routes.js";
import { stackRoutes } from "./stacks-routes.js";
import { usageRoutes } from "./usage-routes.js";
import { choiceRoutes } from "./choices-routes.js";
import { requestRoutes } from "./requests-routes.js";
import { overviewRoutes } from "./overview-routes.js";
import { userRoutes } from "./users-routes.js";

/** Dependencies of the admin API. */
export interface AdminRouterDeps {
  control: ControlPlane;
  sessions: WebSessions;
  events: EventBus;
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
  const handlers: RouteHandlers<Exclude<AdminRoute, SessionRoute | EventRoute | ExportRoute>, Actor> = {
    ...orgRoutes(control),
    ...machineRoutes(control),
    ...stackRoutes(control),
    ...keyRoutes(control),
    ...userRoutes(control),
    ...usageRoutes(control),
    ...auditRoutes(control),
    ...requestRoutes(control),
    ...overviewRoutes(control),
    ...choiceRoutes(control),
    ...alertRoutes(control),
    ...hubRoutes(control),
  };
  mountRoutes(r, "/admin/v1/", handlers, actorOf);
  const live = new EventStreams(deps.events, { keepaliveMs: deps.eventsKeepaliveMs });
  deps.sessions.onEnded((sessionHash) => live.endFor(sessionHash));
  deps.sessions.onUserEnded((userId) => live.endForUser(userId));
  const streams: { [K in EventRoute]: StreamHandler<K, Actor> } = {
    // A user gets its own organization's changes; the operator every organization's, or the one it names.
    "GET /admin/v1/events": (input, actor, res) => {
      const orgId = control.activity.eventScope(actor, input.query().org);
      const filter = (e: { orgId: string }) => orgId === null || e.orgId === orgId;
      if (actor.kind === "user") {
        live.stream(res, filter, { session: actor.sessionHash, user: actor.user.id }, () => deps.sessions.isLive(actor.sessionHash));
      } else {
        // The operator's stream holds while its admin token does.
        const bearer = requestBearer(res.req) ?? "";
        live.stream(res, filter, { session: "operator", user: "operator" }, async () => isAdminToken(bearer, deps.adminTokenHash));
      }
    },
  };
  mountStreams(r, "/admin/v1/", streams, actorOf);
  mountStreams(r, "/admin/v1/", exportRoutes(control), actorOf);
  return r;
}
