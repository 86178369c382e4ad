import { MakinaError } from "../../proto/index.js";

/** How a value of the wrong type is named in a refusal: "null", "an array", "an object", "a string"… */
export function describeValue(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The refusals of a request body's checks, each naming the parameter at fault (cut to 256 characters). */
export const refuse = {
  invalid: (param: string, message: string) => new MakinaError("invalid_value", message, { param }),
  missing: (param: string) => new MakinaError("missing_required_parameter", `Missing required parameter: '${param}'.`, { param }),
  unknown: (param: string) => new MakinaError("unknown_parameter", `Unrecognized request argument supplied: ${param.slice(0, 256)}`, { param: param.slice(0, 256) }),
  unsupported: (param: string, message: string) => new MakinaError("unsupported_parameter", message, { param }),
  /** A body that is not a JSON object. */
  notObject: (body: unknown) => new MakinaError("invalid_value", `The request body must be a JSON object, but got ${describeValue(body)}.`),
};

/** Refuses any key of `o` outside `keys`, naming it under `path`. */
export function onlyKeys(o: Record<string, unknown>, path: string, keys: readonly string[]): void {
  for (const k of Object.keys(o)) if (!keys.includes(k)) throw refuse.unknown(`${path}.${k}`);
}
