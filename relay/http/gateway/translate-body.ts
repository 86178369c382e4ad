import { MakinaError } from "../../../proto/index.js";

/** How a value of the wrong type is named in a refusal: "null", "an array", "an object", "a string"… */
export function describeValue(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * A refusal of a body that was said again in another API's terms (a Messages or Responses body checked as a
 * chat request), told in the terms of the body the client sent: its `param`, and the same name in its text.
 */
export function renameParams(err: unknown, rename: (param: string) => string): unknown {
  if (!(err instanceof MakinaError) || err.param === null) return err;
  const param = rename(err.param);
  if (param === err.param) return err;
  return new MakinaError(err.code, err.message.split(err.param).join(param), { param, retryAfterMs: err.retryAfterMs, cause: err.cause });
}
