import { Router, type Request, type RequestHandler, type Response } from "express";
import { MakinaError } from "../../../proto/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { Store } from "../../store/index.js";
import { jsonBody } from "../json-body.js";
import { adminAuth } from "./admin-auth.js";
import { snakeCase } from "./snake-case.js";

/** Dependencies of the admin API. */
export interface AdminRouterDeps {
  store: Store;
  control: ControlPlane;
  adminTokenHash: () => string | undefined;
}

type Handler = (req: Request, res: Response) => unknown;

/** Wraps a handler: its result is sent as snake_case JSON, its errors go to the error handler. */
const route =
  (fn: Handler, statusCode = 200): RequestHandler =>
  async (req, res, next) => {
    try {
      const result = await fn(req, res);
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

function queryOrg(req: Request): string {
  const org = req.query.org;
  if (typeof org !== "string" || org === "") throw new MakinaError("missing_required_parameter", "Missing required query parameter: 'org'.", { param: "org" });
  return org;
}

/** The admin API (`/admin/v1`), used by the CLI and the web application. */
export function adminRouter(deps: AdminRouterDeps): Router {
  const { control, store } = deps;
  const r = Router();
  r.use("/admin/v1", adminAuth(deps.adminTokenHash), ...jsonBody(1024 * 1024));

  r.get("/admin/v1/orgs", route(() => ({ object: "list", data: store.orgs.list() })));
  r.post("/admin/v1/orgs", route((req) => control.createOrg(req.body?.name), 201));

  r.get("/admin/v1/machines", route((req) => ({ object: "list", data: store.machines.listByOrg(control.org(queryOrg(req)).id) })));
  r.get("/admin/v1/machines/:id", route((req) => control.machine(null, String(req.params.id))));
  r.post(
    "/admin/v1/machines",
    route((req) => {
      const { machine, token, installCommand } = control.createMachine(req.body?.org, req.body?.name);
      return { ...machine, token, installCommand };
    }, 201),
  );

  r.get("/admin/v1/stacks", route((req) => ({ object: "list", data: control.listStacks(queryOrg(req)) })));
  r.get("/admin/v1/stacks/:id", route((req) => control.stack(String(req.params.id))));
  r.post(
    "/admin/v1/stacks",
    route((req) => {
      const b = (req.body ?? {}) as Record<string, unknown>;
      return control.createStack({
        org: b.org as string,
        name: b.name as string,
        machine: b.machine as string,
        runtime: b.runtime as string,
        model: b.model as string,
        modelId: b.model_id as string | undefined,
        harness: (b.harness as string | undefined) ?? null,
        orchestrator: (b.orchestrator as string | undefined) ?? null,
        endpoint: b.endpoint === undefined ? true : b.endpoint === true,
      });
    }, 201),
  );
  r.post("/admin/v1/stacks/:id/deploy", route((req) => control.deploy(String(req.params.id))));
  r.post("/admin/v1/stacks/:id/undeploy", route((req) => control.undeploy(String(req.params.id))));

  r.get("/admin/v1/keys", route((req) => ({ object: "list", data: control.listKeys(queryOrg(req)) })));
  r.post(
    "/admin/v1/keys",
    route((req) => {
      const b = (req.body ?? {}) as Record<string, unknown>;
      const { key, record } = control.createKey(b.org, {
        name: typeof b.name === "string" ? b.name : null,
        stackIds: stringList(b.stacks, "stacks"),
        machineIds: stringList(b.machines, "machines"),
        rpm: optionalInt(b.rpm, "rpm"),
        tpm: optionalInt(b.tpm, "tpm"),
      });
      return { ...record, key };
    }, 201),
  );
  r.post("/admin/v1/keys/:id/revoke", route((req) => control.revokeKey(String(req.params.id))));
  return r;
}
