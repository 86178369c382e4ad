import type { Request, Response, Router } from "express";
import { MakinaError } from "../../../proto/index.js";
import { ADMIN_ROUTES, type AdminCheckedBody, type AdminCheckedQuery, type AdminResponse, type AdminRoute, type ParamsOf } from "../../admin-contract/index.js";
import { checkInput } from "./check-input.js";

/** What a handler of route `K` gets: its path parameters, and its query and body checked against the contract. */
export interface RouteInput<K extends AdminRoute> {
  params: ParamsOf<K>;
  query: AdminCheckedQuery<K>;
  body: AdminCheckedBody<K>;
}

/** A handler of route `K`: reads its input and the caller's context (`C`), calls the control plane, returns the contract's answer. */
export type RouteHandler<K extends AdminRoute, C> = (input: RouteInput<K>, context: C) => AdminResponse<K> | Promise<AdminResponse<K>>;

/** One handler for each of the routes `K`: a route of the contract left out, or one it does not have, fails the build. */
export type RouteHandlers<K extends AdminRoute, C> = { [P in K]: RouteHandler<P, C> };

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Mounts handlers on `router` at their contract's method and path. For each request: the query and the JSON
 * body are checked against the route's schemas, the handler runs with the caller's `context`, and its answer
 * goes out as JSON with the route's status; any error goes on to the error handler (the OpenAI envelope).
 */
export function mountRoutes<K extends AdminRoute, C>(router: Router, handlers: RouteHandlers<K, C>, context: (req: Request, res: Response) => C): void {
  for (const key of Object.keys(handlers) as K[]) {
    const spec = ADMIN_ROUTES[key] as { status: number; body?: Parameters<typeof checkInput>[0]; query?: Parameters<typeof checkInput>[0] };
    const handler = handlers[key] as RouteHandler<K, C>;
    const [method, path] = key.split(" ") as ["GET" | "POST" | "PATCH", string];
    router[method === "GET" ? "get" : method === "POST" ? "post" : "patch"](path, async (req, res, next) => {
      try {
        const body = req.body ?? {};
        if (spec.body && !isPlainObject(body)) throw new MakinaError("invalid_value", "The request body must be a JSON object.");
        const input = {
          params: req.params,
          query: spec.query ? checkInput(spec.query, req.query) : undefined,
          body: spec.body ? checkInput(spec.body, body) : undefined,
        } as RouteInput<K>;
        const answer = await handler(input, context(req, res));
        res.status(spec.status).json(answer);
      } catch (err) {
        next(err);
      }
    });
  }
}
