// The admin API's one contract: every route of `/admin/v1` and `/auth/v1` with its request (zod schemas, which
// the relay checks and clients' types come from), its answer and the error envelope, and the event stream's
// events. The relay's handlers implement exactly these routes; the web application and the CLI import this
// file's types only (`import type`), so neither carries zod nor any relay code.
import { ALERT_ROUTES } from "./alerts.js";
import { AUDIT_ROUTES } from "./audit.js";
import { CHOICE_ROUTES } from "./choices.js";
import { EVENT_ROUTES } from "./events.js";
import { HUB_ROUTES } from "./hub.js";
import { KEY_ROUTES } from "./keys.js";
import { MACHINE_ROUTES } from "./machines.js";
import { ORG_ROUTES } from "./orgs.js";
import { OVERVIEW_ROUTES } from "./overview.js";
import { REQUEST_ROUTES } from "./requests.js";
import type { BodyOut, CallArgs, QueryIn, QueryOut, ResponseOf } from "./route.js";
import { SESSION_ROUTES } from "./session.js";
import { STACK_ROUTES } from "./stacks.js";
import { USAGE_ROUTES } from "./usage.js";
import { USER_ROUTES } from "./users.js";

/** Every route, by `METHOD /path`. */
export const ADMIN_ROUTES = {
  ...ORG_ROUTES,
  ...MACHINE_ROUTES,
  ...STACK_ROUTES,
  ...KEY_ROUTES,
  ...USER_ROUTES,
  ...USAGE_ROUTES,
  ...AUDIT_ROUTES,
  ...REQUEST_ROUTES,
  ...OVERVIEW_ROUTES,
  ...CHOICE_ROUTES,
  ...EVENT_ROUTES,
  ...SESSION_ROUTES,
  ...ALERT_ROUTES,
  ...HUB_ROUTES,
};

export type AdminRoutes = typeof ADMIN_ROUTES;
/** A route's key: `METHOD /path`. */
export type AdminRoute = keyof AdminRoutes;
/** What route `K` answers. */
export type AdminResponse<K extends AdminRoute> = ResponseOf<AdminRoutes, K>;
/** The body of route `K` once checked, as the relay's handler gets it. */
export type AdminCheckedBody<K extends AdminRoute> = BodyOut<AdminRoutes, K>;
/** The query of route `K` once checked. */
export type AdminCheckedQuery<K extends AdminRoute> = QueryOut<AdminRoutes, K>;
/** The arguments of a call of route `K` after its key. */
export type AdminCallArgs<K extends AdminRoute> = CallArgs<AdminRoutes, K>;
/** What a client may put in the query of route `K`. */
export type AdminQuery<K extends AdminRoute> = QueryIn<AdminRoutes, K>;

/** The routes of each resource, for the relay's handlers of it. */
export type OrgRoute = keyof typeof ORG_ROUTES;
export type MachineRoute = keyof typeof MACHINE_ROUTES;
export type StackRoute = keyof typeof STACK_ROUTES;
export type KeyRoute = keyof typeof KEY_ROUTES;
export type UserRoute = keyof typeof USER_ROUTES;
export type UsageRoute = keyof typeof USAGE_ROUTES;
export type AuditRoute = keyof typeof AUDIT_ROUTES;
export type RequestRoute = keyof typeof REQUEST_ROUTES;
export type OverviewRoute = keyof typeof OVERVIEW_ROUTES;
export type ChoiceRoute = keyof typeof CHOICE_ROUTES;
export type EventRoute = keyof typeof EVENT_ROUTES;
export type SessionRoute = keyof typeof SESSION_ROUTES;
export type AlertRoute = keyof typeof ALERT_ROUTES;
export type HubRoute = keyof typeof HUB_ROUTES;
/** The routes that answer CSV, streamed, rather than one JSON document. */
export type ExportRoute = "GET /admin/v1/audit.csv" | "GET /admin/v1/requests.csv";

export { paramOf } from "./fields.js";
export type { Method, ParamsOf, RouteSpec } from "./route.js";
export type { ErrorBody } from "./errors.js";
export type { List, Page } from "./list.js";
export { MAX_PER_PAGE } from "./list.js";
export type { Org } from "./orgs.js";
export type { AlertWebhook, NewAlertWebhook, AlertDelivery } from "./alerts.js";
export type { HubFile, HubRepo, HubRepoFiles } from "./hub.js";
export type { Gpu, Hardware, Machine, MachineInventory, MachineJoining, MachineState } from "./machines.js";
export type { CatalogModel, Check, Compatibility, DeletedStack, Deployment, DeploymentStep, LayerOptionValue, RuntimeKind, Stack, StackChange, StackResidency, StackState } from "./stacks.js";
export { KEY_SORTS, type ApiKey, type ApiKeyWithUsage, type NewApiKey } from "./keys.js";
export type { DeletedUser, Role, User } from "./users.js";
export { AUDIT_ACTIONS, type AuditAction, type AuditEvent, type AuditPage } from "./audit.js";
export { USAGE_SORTS, type Usage, type UsagePoint, type UsageSeries } from "./usage.js";
export { MODEL_ID } from "./fields.js";
export type { GpuLoad, MachineLoad, MinutePoint, ModelMemory, Overview, RequestFigures } from "./overview.js";
export type { Choices, MachineChoice, StackChoice } from "./choices.js";
export type { LogPage } from "./logs.js";
export { REQUEST_APIS, REQUEST_STATUSES, type LoggedRequest, type RequestDetail } from "./requests.js";
export type { AdminEvent, AdminEventData, AdminEventType } from "./events.js";
export type { SessionInfo } from "./session.js";
