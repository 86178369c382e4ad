import { MakinaError } from "../errors/index.js";
import type { ErrorReport } from "./link-messages.js";

/** Reports any error across the link; internal details (the cause) stay on the sending side. */
export function toErrorReport(err: unknown): ErrorReport {
  const e = MakinaError.from(err);
  return { code: e.code, message: e.message, retryAfterMs: e.retryAfterMs ?? 0, param: e.param ?? "" };
}

/** Turns an error that crossed the link back into the one error type. */
export function fromErrorReport(err: ErrorReport): MakinaError {
  return MakinaError.fromLink(err.code, err.message, err.retryAfterMs || undefined, err.param ? err.param.slice(0, 128) : undefined);
}
