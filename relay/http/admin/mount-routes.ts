import type { Request, Response, Router } from "express";
import type { z } from "zod";
import { MakinaError } from "../../../proto/index.js";
import { ADMIN_ROUTES, type AdminCheckedBody, type AdminCheckedQuery, type AdminResponse, type AdminRoute, type Method, type ParamsOf } from "../../admin-contract/index.js";
import { refuse } from "../json-values.js";
import { checkInput } from "./check-input.js";

/**
 * What a handler of route `K` gets: its path parameters, and its query and body checked against the contract
 * when it asks for them (once), so a handler checks who is calling (the caller's role, the session's CSRF
 * token) before it says what is wrong with the request.
 */
export interface RouteInput<K extends AdminRoute> {
  params: ParamsOf<K>;
  query(): AdminCheckedQuery<K>;
  body(): AdminCheckedBody<K>;
}

/** A handler of route `K`: reads its input and the caller's context (`C`), calls the control plane, returns the contract's answer. */
export type RouteHandler<K extends AdminRoute, C> = (input: RouteInput<K>, context: C) => AdminResponse<K> | Promise<AdminResponse<K>>;

/** One handler for each of the routes `K`: a route of the contract left out, or one it does not have, fails the build. */
export type RouteHandlers<K extends AdminRoute, C> = { [P in K]: RouteHandler<P, C> };

/**
 * A route that answers with a stream (server-sent events, CSV) it writes on `res` itself, rather than one JSON
 * document. An error it throws or rejects with before it starts answering goes to the error handler; one after,
 * ends the response short.
 */
export type StreamHandler<K extends AdminRoute, C> = (input: RouteInput<K>, context: C, res: Response) => void | Promise<void>;

/** What mounting reads of a route's declaration. */
interface MountedSpec {
  status: number;
  body?: z.ZodType;
  query?: z.ZodType;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** A route's input, its query and body checked when first asked for. */
function routeInput(spec: MountedSpec, req: Request): RouteInput<AdminRoute> {
  let query: unknown;
  let body: unknown;
  return {
    params: req.params as never,
    query: () => (query ??= spec.query ? checkInput(spec.query, req.query) : undefined) as never,
    body: () => {
      if (body === undefined && spec.body) {
        const sent: unknown = req.body ?? {};
        if (!isPlainObject(sent)) throw new MakinaError("invalid_value", "The request body must be a JSON object.");
        body = checkInput(spec.body, sent);
      }
      return body as never;
    },
  };
}

/**
 * Refuses what a route that declares no body, or no query, is sent in one: its first field, as
 * `unknown_parameter`. (A route that declares them refuses a field they lack when its handler reads them.) This
 * runs before the handler, so before its checks of who is calling; the router's authentication has run.
 */
function refuseUndeclared(spec: MountedSpec, req: Request): void {
  const fields = [...(spec.body || !isPlainObject(req.body) ? [] : Object.keys(req.body)), ...(spec.query ? [] : Object.keys(req.query ?? {}))];
  if (fields.length > 0) throw refuse.unknown(fields[0]!);
}

/** The route's method and path, refused unless the path is under `prefix` (where the router's authentication is). */
function placeOf(key: AdminRoute, prefix: string): { method: "get" | "post" | "put" | "patch" | "delete"; path: string } {
  const [method, path] = key.split(" ") as [Method, string];
  if (!path.startsWith(prefix)) throw new Error(`The admin route '${key}' is not under ${prefix}, where its authentication is.`);
  return { method: method.toLowerCase() as "get" | "post" | "put" | "patch" | "delete", path };
}

/**
 * Mounts handlers on `router` at their contract's method and path, every path under `prefix` (where the
 * router's authentication is: a route outside it stops the relay at start). For each request the handler
 * runs with the caller's `context` and reads its checked input; its answer goes out as JSON with the route's
 * status, and any error on to the error handler (the OpenAI envelope).
 */
export function mountRoutes<K extends AdminRoute, C>(router: Router, prefix: "/admin/v1/" | "/auth/v1/", handlers: RouteHandlers<K, C>, context: (req: Request, res: Response) => C): void {
  for (const key of Object.keys(handlers) as K[]) {
    const spec: MountedSpec = ADMIN_ROUTES[key];
    const handler = handlers[key] as RouteHandler<AdminRoute, C>;
    const { method, path } = placeOf(key, prefix);
    router[method](path, async (req, res, next) => {
      try {
        refuseUndeclared(spec, req);
        const answer = await handler(routeInput(spec, req), context(req, res));
        res.status(spec.status).json(answer);
      } catch (err) {
        next(err);
      }
    });
  }
}

/** Mounts stream handlers (the event stream) the way {@link mountRoutes} mounts the others; a stream's errors before it starts go to the error handler. */
export function mountStreams<K extends AdminRoute, C>(router: Router, prefix: "/admin/v1/", handlers: { [P in K]: StreamHandler<P, C> }, context: (req: Request, res: Response) => C): void {
  for (const key of Object.keys(handlers) as K[]) {
    const spec: MountedSpec = ADMIN_ROUTES[key];
    const handler = handlers[key] as StreamHandler<AdminRoute, C>;
    const { method, path } = placeOf(key, prefix);
    router[method](path, (req, res, next) => {
      try {
        refuseUndeclared(spec, req);
        const started = handler(routeInput(spec, req), context(req, res), res);
        started?.catch((err: unknown) => (res.headersSent ? res.destroy(err instanceof Error ? err : new Error(String(err))) : next(err)));
      } catch (err) {
        next(err);
      }
    });
  }
}
