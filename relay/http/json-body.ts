import type { RequestHandler } from "express";
import { readJsonBody } from "./read-json-body.js";

/**
 * Parses a JSON request body into `req.body` (see {@link readJsonBody} for what is refused). Only POST,
 * PUT and PATCH carry bodies.
 */
export function jsonBody(limitBytes: number): RequestHandler[] {
  return [
    (req, _res, next) => {
      if (!["POST", "PUT", "PATCH"].includes(req.method)) return next();
      readJsonBody(req, limitBytes).then((body) => {
        req.body = body;
        next();
      }, next);
    },
  ];
}
