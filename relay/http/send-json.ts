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

/** An error's status and body in one API's envelope. */
export type ErrorShape = (e: MakinaError) => { status: number; body: unknown };

/** The OpenAI envelope, with the error table's status: the gateway's and the admin API's. */
const openAiShape: ErrorShape = (e) => ({ status: e.mapping.http, body: e.toBody() });

/**
 * Renders any error in an API's envelope (OpenAI's unless `shape` says otherwise) with its status and
 * `Retry-After`; unexpected ones are logged, never shown. After the first byte there is no envelope to send:
 * the connection is cut. Returns the error's code.
 */
export function sendError(res: ServerResponse, err: unknown, log: Logger, requestId: unknown, shape: ErrorShape = openAiShape): string {
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
  const { status, body } = shape(e);
  sendJson(res, status, body);
  return e.code;
}
