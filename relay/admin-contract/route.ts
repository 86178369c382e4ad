import type { z } from "zod";

/** The HTTP methods the admin API uses. */
export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/**
 * One route of the contract. Its key in the route table is `METHOD /path` with `:name` for path parameters
 * (`GET /admin/v1/machines/:id`), so a client needs only the key to call it. `body` and `query` are zod
 * strict objects (`z.strictObject`: a field they do not name is refused): the relay checks a request with them,
 * and a client's types come from them (`z.input`), so the check and the types are one declaration. `response` is a type only (see {@link answer}).
 */
export interface RouteSpec<Response = unknown> {
  /** The status of a success. */
  status: 200 | 201;
  body?: z.ZodType;
  query?: z.ZodType;
  /** The answer's type; nothing at run time. */
  response: Response;
}

/** Declares a route's answer type. It exists only for the type checker: the value is `undefined`. */
export const answer = <T>(): T => undefined as T;

/** Declares a route: 200 unless said, no body or query unless given. */
export function route<S extends Omit<RouteSpec, "status"> & { status?: 200 | 201 }>(spec: S): S & { status: 200 | 201 } {
  return { status: 200, ...spec };
}

/** A route table: keys are `METHOD /path`. */
export type RouteTable = Record<`${Method} /${string}`, RouteSpec>;

type PathOf<K> = K extends `${Method} ${infer P}` ? P : never;
type ParamNames<P> = P extends `${string}:${infer N}/${infer Rest}` ? N | ParamNames<`/${Rest}`> : P extends `${string}:${infer N}` ? N : never;

/** The path parameters of route `K` (`{ id: string }` for `…/:id`). */
export type ParamsOf<K> = { [N in ParamNames<PathOf<K>>]: string };
/** What a client sends as the body of route `K`; undefined when it takes none. */
export type BodyIn<T extends RouteTable, K extends keyof T> = T[K] extends { body: z.ZodType } ? z.input<T[K]["body"]> : undefined;
/** The body of route `K` as the relay's handler gets it, checked (defaults applied, values normalised). */
export type BodyOut<T extends RouteTable, K extends keyof T> = T[K] extends { body: z.ZodType } ? z.output<T[K]["body"]> : undefined;
/** What a client may put in the query string of route `K`. */
export type QueryIn<T extends RouteTable, K extends keyof T> = T[K] extends { query: z.ZodType } ? z.input<T[K]["query"]> : undefined;
/** The query of route `K` as the relay's handler gets it, checked. */
export type QueryOut<T extends RouteTable, K extends keyof T> = T[K] extends { query: z.ZodType } ? z.output<T[K]["query"]> : undefined;
/** What route `K` answers on success. */
export type ResponseOf<T extends RouteTable, K extends keyof T> = T[K] extends { response: infer R } ? R : never;

/**
 * What a client passes to call route `K`: `params` when its path has some, `body` when it takes one, and
 * optionally `query`. A call needs no argument when nothing is required.
 */
export type CallParts<T extends RouteTable, K extends keyof T> = (keyof ParamsOf<K> extends never ? { params?: undefined } : { params: ParamsOf<K> }) &
  (BodyIn<T, K> extends undefined ? { body?: undefined } : { body: BodyIn<T, K> }) &
  (QueryIn<T, K> extends undefined ? { query?: undefined } : { query?: QueryIn<T, K> });
/** The arguments of a call of route `K` after its key: optional when none of its {@link CallParts} is required (`{}` fits them). */
export type CallArgs<T extends RouteTable, K extends keyof T> = {} extends CallParts<T, K> ? [parts?: CallParts<T, K>] : [parts: CallParts<T, K>];
