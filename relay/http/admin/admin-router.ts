import { Router, type Request, type RequestHandler } from "express";
import { MakinaError } from "../../../proto/index.js";
import type { Access, WebSessions } from "../../auth/index.js";
import { MODEL_CATALOG } from "../../compatibility/index.js";
import type { EventBus } from "../../events/index.js";
import type { UsageRecorder } from "../../usage/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { Store } from "../../store/index.js";
import { jsonBody } from "../json-body.js";
import { accessOf, adminAuth } from "./admin-auth.js";
import { streamEvents } from "./event-stream.js";
import { snakeCase } from "./snake-case.js";

/** Dependencies of the admin API. */
export interface AdminRouterDeps {
  store: Store;
  control: ControlPlane;
  sessions: WebSessions;
  events: EventBus;
  usage: UsageRecorder;
  adminTokenHash: () => string | undefined;
}

type Handler = (req: Request, access: Access) => unknown;

/** Wraps a handler: its result is sent as snake_case JSON, its errors go to the error handler. */
const route =
  (fn: Handler, statusCode = 200): RequestHandler =>
  async (req, res, next) => {
    try {
      const result = await fn(req, accessOf(req, res));
      res.status(statusCode).json(snakeCase(result));
    } catch (err) {
      next(err);
    }
  };

function stringList(v: unknown, param: string): string[] | null {
  if (v === undefined || v === null) return null;
  if (Array.isArray(v) && v.every((s) => typeof s === "string")) return v;
  throw new MakinaError("invalid_value", `'${param}' must be an array of strings.`, { param });
}

function optionalInt(v: unknown, param: string): number | null {
  if (v === undefined || v === null) return null;
  if (typeof v === "number" && Number.isInteger(v)) return v;
  throw new MakinaError("invalid_value", `'${param}' must be an integer.`, { param });
}

/** The admin API (`/admin/v1`), used by the CLI (admin token) and the web application (session cookie). */
export function adminRouter(deps: AdminRouterDeps): Router {
  const { control, store } = deps;
  const r = Router();
  r.use("/admin/v1", adminAuth(deps), ...jsonBody(1024 * 1024));
  const body = (req: Request) => (req.body ?? {}) as Record<string, unknown>;
  const stackOf = (access: Access, id: string) => {
    const stack = control.stack(id);
    access.see(stack.orgId, "stack", id, "stack");
    return stack;
  };

  r.get(
    "/admin/v1/orgs",
    route((_req, access) => ({ object: "list", data: access.orgScope === null ? store.orgs.list() : [access.org(undefined)] })),
  );
  r.post(
    "/admin/v1/orgs",
    route((req, access) => {
      if (access.principal.kind !== "operator") throw new MakinaError("permission_denied", "Only the relay's operator (admin token) can create organizations.");
      return control.createOrg(body(req).name);
    }, 201),
  );

  r.patch(
    "/admin/v1/orgs/:org",
    route((req, access) => {
      access.requireAdmin("change the organization's default key limits");
      const b = body(req);
      return control.setOrgKeyDefaults(access.org(String(req.params.org)).id, { rpm: b.default_key_rpm, tpm: b.default_key_tpm });
    }),
  );

  r.get("/admin/v1/machines", route((req, access) => ({ object: "list", data: store.machines.listByOrg(access.org(req.query.org).id) })));
  r.get("/admin/v1/machines/:id", route((req, access) => control.machine(access.orgScope, String(req.params.id))));
  r.post(
    "/admin/v1/machines",
    route((req, access) => {
      access.requireAdmin("add machines");
      const { machine, token, installCommand, server, caSha256 } = control.createMachine(access.org(body(req).org).id, body(req).name);
      return { ...machine, token, installCommand, server, caSha256 };
    }, 201),
  );

  r.post(
    "/admin/v1/machines/:id/revoke",
    route((req, access) => {
      access.requireAdmin("revoke machines");
      return control.revokeMachine(access.orgScope, String(req.params.id));
    }),
  );
  r.post(
    "/admin/v1/machines/:id/rotate-token",
    route((req, access) => {
      access.requireAdmin("rotate machine tokens");
      const { machine, token, installCommand, server, caSha256 } = control.rotateMachineToken(access.orgScope, String(req.params.id));
      return { ...machine, token, installCommand, server, caSha256 };
    }),
  );

  r.get("/admin/v1/stacks", route((req, access) => ({ object: "list", data: control.listStacks(access.org(req.query.org).id) })));
  r.get("/admin/v1/stacks/:id", route((req, access) => stackOf(access, String(req.params.id))));
  r.post(
    "/admin/v1/stacks",
    route((req, access) => {
      access.requireAdmin("create stacks");
      const b = body(req);
      return control.createStack({
        org: access.org(b.org).id,
        name: b.name as string,
        machine: b.machine as string,
        runtime: b.runtime as string,
        model: b.model as string,
        modelSha256: b.model_sha256 as string | undefined,
        modelId: b.model_id as string | undefined,
        harness: (b.harness as string | undefined) ?? null,
        harnessOptions: b.harness_options,
        orchestrator: (b.orchestrator as string | undefined) ?? null,
        orchestratorOptions: b.orchestrator_options,
        endpoint: b.endpoint === undefined ? true : b.endpoint === true,
      });
    }, 201),
  );
  r.post(
    "/admin/v1/compatibility",
    route((req, access) => {
      const b = body(req);
      return control.checkPlan({
        org: access.org(b.org).id,
        machine: b.machine as string | undefined,
        runtime: b.runtime as string,
        model: b.model as string | undefined,
        harness: (b.harness as string | undefined) ?? null,
        orchestrator: (b.orchestrator as string | undefined) ?? null,
        orchestratorOptions: b.orchestrator_options,
        endpoint: b.endpoint === undefined ? true : b.endpoint === true,
      });
    }),
  );
  r.get("/admin/v1/catalog", route(() => ({ object: "list", data: MODEL_CATALOG.map(({ facts, ...m }) => ({ ...m, sizeBytes: facts.weightsBytes })) })));
  r.post(
    "/admin/v1/stacks/:id/deploy",
    route((req, access) => {
      access.requireAdmin("deploy stacks");
      return control.deploy(stackOf(access, String(req.params.id)).id);
    }),
  );
  r.post(
    "/admin/v1/stacks/:id/undeploy",
    route((req, access) => {
      access.requireAdmin("undeploy stacks");
      return control.undeploy(stackOf(access, String(req.params.id)).id);
    }),
  );

  r.get(
    "/admin/v1/keys",
    route((req, access) => {
      const org = access.org(req.query.org);
      const day = deps.usage.totalsByKey(org.id, Date.now() - 86_400_000);
      return { object: "list", data: control.listKeys(org.id).map((k) => ({ ...k, requests_24h: day.get(k.id)?.requests ?? 0, tokens_24h: day.get(k.id)?.tokens ?? 0 })) };
    }),
  );
  r.get(
    "/admin/v1/usage",
    route((req, access) => {
      const org = access.org(req.query.org);
      const range = req.query.range === undefined ? "24h" : req.query.range;
      const by = req.query.by === undefined ? "key" : req.query.by;
      if (range !== "24h" && range !== "30d") throw new MakinaError("invalid_value", "'range' must be 24h or 30d.", { param: "range" });
      if (by !== "key" && by !== "model") throw new MakinaError("invalid_value", "'by' must be key or model.", { param: "by" });
      return { object: "usage", range, by, ...deps.usage.series(org.id, range, by) };
    }),
  );
  r.post(
    "/admin/v1/keys",
    route((req, access) => {
      const b = body(req);
      const { key, record } = control.createKey(access.org(b.org).id, {
        name: typeof b.name === "string" ? b.name : null,
        stackIds: stringList(b.stacks, "stacks"),
        machineIds: stringList(b.machines, "machines"),
        rpm: optionalInt(b.rpm, "rpm"),
        tpm: optionalInt(b.tpm, "tpm"),
        createdBy: access.userId,
      });
      return { ...record, key };
    }, 201),
  );
  r.post(
    "/admin/v1/keys/:id/revoke",
    route((req, access) => {
      const id = String(req.params.id);
      const key = store.keys.get(id);
      if (!key) throw new MakinaError("not_found", `No API key '${id}'.`, { param: "key" });
      access.see(key.orgId, "API key", id, "key");
      if (!access.isAdmin && key.createdBy !== access.userId) throw new MakinaError("permission_denied", "Members can revoke only the keys they created.");
      return control.revokeKey(id);
    }),
  );

  r.get(
    "/admin/v1/users",
    route((req, access) => ({ object: "list", data: store.users.listByOrg(access.org(req.query.org).id) })),
  );
  r.post(
    "/admin/v1/users",
    route((req, access) => {
      access.requireAdmin("add users");
      const b = body(req);
      return control.createUser(access.org(b.org).id, { login: b.login, password: b.password, role: b.role });
    }, 201),
  );

  r.get("/admin/v1/events", (req, res, next) => {
    try {
      const access = accessOf(req, res);
      const orgId = access.orgScope ?? (req.query.org === undefined ? null : access.org(req.query.org).id);
      streamEvents(res, deps.events, (e) => orgId === null || e.orgId === orgId);
    } catch (err) {
      next(err);
    }
  });
  return r;
}
