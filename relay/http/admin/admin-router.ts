import { Router } from "express";
import { ADMIN_ROUTES, type AdminRoute, type EventRoute, type SessionRoute } from "../../admin-contract/index.js";
import type { WebSessions } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { EventBus } from "../../events/index.js";
import type { UsageRecorder } from "../../usage/index.js";
import { checkInput } from "./check-input.js";
import { jsonBody } from "../json-body.js";
import { accessOf, adminAuth } from "./admin-auth.js";
import { streamEvents } from "./event-stream.js";
import { keyRoutes } from "./keys-routes.js";
import { machineRoutes } from "./machines-routes.js";
import { mountRoutes, type RouteHandlers } from "./mount-routes.js";
import { orgRoutes } from "./orgs-routes.js";
import { stackRoutes } from "./stacks-routes.js";
import { usageRoutes } from "./usage-routes.js";
import { userRoutes } from "./users-routes.js";
import type { Access } from "../../auth/index.js";

/** Dependencies of the admin API. */
export interface AdminRouterDeps {
  control: ControlPlane;
  sessions: WebSessions;
  events: EventBus;
  usage: UsageRecorder;
  adminTokenHash: () => string | undefined;
}

/** The event stream's route: server-sent events rather than one JSON answer. */
const EVENTS: EventRoute = "GET /admin/v1/events";

/**
 * The admin API (`/admin/v1`), used by the CLI (admin token) and the web application (session cookie): every
 * route of the admin contract but sign-in's, each resource's handlers in a file of their own.
 */
export function adminRouter(deps: AdminRouterDeps): Router {
  const { control } = deps;
  const r = Router();
  r.use("/admin/v1", adminAuth(deps), ...jsonBody(1024 * 1024));
  const handlers: RouteHandlers<Exclude<AdminRoute, SessionRoute | EventRoute>, Access> = {
    ...orgRoutes(control),
    ...machineRoutes(control),
    ...stackRoutes(control),
    ...keyRoutes(control, deps.usage),
    ...userRoutes(control),
    ...usageRoutes(deps.usage),
  };
  mountRoutes(r, handlers, accessOf);
  r.get(EVENTS.split(" ")[1]!, (req, res, next) => {
    try {
      const access = accessOf(req, res);
      const { org } = checkInput(ADMIN_ROUTES[EVENTS].query, req.query);
      const orgId = access.orgScope ?? (org === undefined || org === null ? null : access.org(org).id);
      streamEvents(res, deps.events, (e) => orgId === null || e.orgId === orgId);
    } catch (err) {
      next(err);
    }
  });
  return r;
}
