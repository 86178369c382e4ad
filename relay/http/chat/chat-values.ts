import type { ContentPart, ToolCall } from "../../../proto/index.js";
import { describeValue, isPlainObject, refuse } from "../json-values.js";

/**
 * Checks of one value of a chat request, whatever the API that carries it: each takes the name the client gave
 * the value (`temperature`, `tools[0].input_schema`, `input[2].call_id`), so its refusal names the client's field.
 */
const { invalid, missing } = refuse;

export type ValueCheck = (v: unknown, name: string) => void;

export const number =
  (min: number, max: number): ValueCheck =>
  (v, name) => {
    if (typeof v !== "number" || !Number.isFinite(v)) throw invalid(name, `Invalid type for '${name}': expected a number, but got ${describeValue(v)}.`);
    if (v < min || v > max) throw invalid(name, `Invalid '${name}': ${v} is outside the range ${min} to ${max}.`);
  };

export const integer =
  (min: number, max: number): ValueCheck =>
  (v, name) => {
    if (typeof v !== "number" || !Number.isInteger(v)) throw invalid(name, `Invalid type for '${name}': expected an integer, but got ${describeValue(v)}.`);
    if (v < min || v > max) throw invalid(name, `Invalid '${name}': ${v} is outside the range ${min} to ${max}.`);
  };

export const boolean: ValueCheck = (v, name) => {
  if (typeof v !== "boolean") throw invalid(name, `Invalid type for '${name}': expected a boolean, but got ${describeValue(v)}.`);
};

export const string =
  (maxLength: number): ValueCheck =>
  (v, name) => {
    if (typeof v !== "string") throw invalid(name, `Invalid type for '${name}': expected a string, but got ${describeValue(v)}.`);
    if (v.length > maxLength) throw invalid(name, `Invalid '${name}': longer than ${maxLength} characters.`);
  };

export const oneOf =
  (...values: string[]): ValueCheck =>
  (v, name) => {
    if (typeof v !== "string" || !values.includes(v)) throw invalid(name, `Invalid value for '${name}': expected one of ${values.map((x) => `'${x}'`).join(", ")}.`);
  };

export const object: ValueCheck = (v, name) => {
  if (!isPlainObject(v)) throw invalid(name, `Invalid type for '${name}': expected an object, but got ${describeValue(v)}.`);
};

export const array: ValueCheck = (v, name) => {
  if (!Array.isArray(v)) throw invalid(name, `Invalid type for '${name}': expected an array, but got ${describeValue(v)}.`);
};

/** Passes when any of `checks` passes; otherwise refuses as the first did. */
export const either =
  (...checks: ValueCheck[]): ValueCheck =>
  (v, name) => {
    const errors: unknown[] = [];
    for (const c of checks) {
      try {
        return c(v, name);
      } catch (e) {
        errors.push(e);
      }
    }
    throw errors[0];
  };

/** `model`: a non-empty string of at most 256 characters. */
export function modelOf(v: unknown, name: string): string {
  if (v === undefined || v === null) throw missing(name);
  if (typeof v !== "string" || v === "" || v.length > 256) throw invalid(name, `Invalid type for '${name}': expected a non-empty string of at most 256 characters, but got ${describeValue(v)}.`);
  return v;
}

/** Longest image URL taken (a `data:` URI carries the image itself: 20 MiB of base64 at most). */
const MAX_IMAGE_URL_CHARS = 20 * 1024 * 1024;

/** An image part by its URL (`https://`/`http://`, or a `data:image/…;base64,` URI), `url` and `detail` named as the client gave them. */
export function imagePart(url: string, detail: unknown, names: { url: string; detail: string }): ContentPart {
  if (url.length > MAX_IMAGE_URL_CHARS || !/^(https?:\/\/\S+|data:image\/[a-z0-9.+-]+;base64,[A-Za-z0-9+/=\s]+)$/i.test(url)) {
    throw invalid(names.url, `Invalid '${names.url}': expected an http(s) URL or a data:image/…;base64 URI of at most ${MAX_IMAGE_URL_CHARS} characters.`);
  }
  if (detail !== undefined && detail !== null) oneOf("auto", "low", "high")(detail, names.detail);
  return { type: "image_url", text: "", imageUrl: url, detail: typeof detail === "string" ? detail : "" };
}

/** A function's name: what the vendors accept. */
export const FUNCTION_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** A call an earlier answer made (an assistant message's), its id, function name and JSON arguments named as the client gave them. */
export function toolCallOf(call: { id: unknown; name: unknown; arguments: unknown }, names: { id: string; name: string; arguments: string }): ToolCall {
  const { id, name, arguments: args } = call;
  if (typeof id !== "string" || id === "" || id.length > 256) throw id === undefined || id === null || id === "" ? missing(names.id) : invalid(names.id, `Invalid '${names.id}': a string of 1 to 256 characters.`);
  if (typeof name !== "string" || !FUNCTION_NAME.test(name)) throw invalid(names.name, `Invalid '${names.name}': 1 to 64 letters, digits, underscores or dashes.`);
  if (typeof args !== "string") throw missing(names.arguments);
  try {
    JSON.parse(args);
  } catch {
    throw invalid(names.arguments, `Invalid '${names.arguments}': not JSON.`);
  }
  return { id, name, arguments: args };
}

