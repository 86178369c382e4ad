import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { RequestHandler } from "express";

const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The request's `x-request-id` (the client's, when it is sane, else a new one), echoed on the response.
 * A response that already carries one keeps it.
 */
export function requestIdFor(req: IncomingMessage, res: ServerResponse): string {
  const existing = res.getHeader("x-request-id");
  if (typeof existing === "string") return existing;
  const incoming = req.headers["x-request-id"];
  const id = typeof incoming === "string" && SAFE_ID.test(incoming) ? incoming : `req_${randomUUID().replaceAll("-", "")}`;
  res.setHeader("x-request-id", id);
  return id;
}

/** Gives every request an `x-request-id` in `res.locals.requestId`. */
export function requestId(): RequestHandler {
  return (req, res, next) => {
    res.locals.requestId = requestIdFor(req, res);
    next();
  };
}
