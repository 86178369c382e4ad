import type { ServerResponse } from "node:http";
import { MakinaError, type Logger } from "../../proto/index.js";
import { storageError } from "../health/index.js";

/** Answers with a JSON body (what Express's `res.json` does, without Express). */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", Buffer.byteLength(text));
  res.end(text);
}

/**
 * Renders any error in the OpenAI envelope with its status and `Retry-After`; unexpected ones are logged,
 * never shown. After the first byte there is no envelope to send: the connection is cut. Returns the
 * error's code.
 */
export function sendError(res: ServerResponse, err: unknown, log: Logger, requestId: unknown): string {
  const e = storageError(err) ?? MakinaError.from(err);
  if (e.code === "internal_error") log.error("unexpected error", { requestId, err, cause: e.cause });
  if (res.headersSent) {
    res.destroy();
    return e.code;
  }
  if (e.retryAfterMs !== undefined) {
    res.setHeader("Retry-After", String(Math.max(1, Math.ceil(e.retryAfterMs / 1000))));
    res.setHeader("retry-after-ms", String(e.retryAfterMs));
  }
  sendJson(res, e.mapping.http, e.toBody());
  return e.code;
}
