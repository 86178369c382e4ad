import { randomUUID } from "node:crypto";
import type { RequestHandler } from "express";

const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Gives every request an `x-request-id` (the client's, when it is sane) and echoes it on the response. */
export function requestId(): RequestHandler {
  return (req, res, next) => {
    const incoming = req.get("x-request-id");
    const id = incoming && SAFE_ID.test(incoming) ? incoming : `req_${randomUUID().replaceAll("-", "")}`;
    res.locals.requestId = id;
    res.setHeader("x-request-id", id);
    next();
  };
}
