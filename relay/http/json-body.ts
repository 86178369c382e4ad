import express, { type RequestHandler } from "express";
import { MakinaError } from "../../proto/index.js";

/**
 * Parses a JSON request body: 415 when the Content-Type is not JSON, 413 past
 * `limitBytes`, 400 `invalid_json` when it does not parse. Only POST, PUT and
 * PATCH carry bodies.
 */
export function jsonBody(limitBytes: number): RequestHandler[] {
  const utf8 = new TextDecoder("utf-8", { fatal: true });
  const parse = express.json({
    limit: limitBytes,
    strict: false,
    type: () => true,
    // JSON is UTF-8: a body with invalid bytes is refused rather than silently repaired. The same look at the
    // raw bytes notes whether the body could hold a forbidden key, so only such bodies are walked after parsing.
    verify: (req, _res, buf) => {
      try {
        utf8.decode(buf);
      } catch (err) {
        throw Object.assign(new Error("invalid UTF-8"), { type: "entity.parse.failed", cause: err });
      }
      if (SUSPECT_BYTES.some((b) => buf.includes(b))) (req as { mayHoldForbiddenKey?: boolean }).mayHoldForbiddenKey = true;
    },
  });
  return [
    (req, _res, next) => {
      if (!["POST", "PUT", "PATCH"].includes(req.method)) return next();
      // A request without a body (none, or `Content-Length: 0`) has nothing to parse or refuse.
      const empty = req.headers["transfer-encoding"] === undefined && (req.headers["content-length"] ?? "0") === "0";
      if (empty) return next();
      if (!req.is("application/json")) {
        return next(new MakinaError("unsupported_media_type", "Invalid Content-Type header: send the body as JSON with `Content-Type: application/json`."));
      }
      parse(req, _res, (err?: unknown) => {
        if (err !== undefined) return next(bodyError(err, limitBytes));
        const key = (req as { mayHoldForbiddenKey?: boolean }).mayHoldForbiddenKey ? forbiddenKeyIn(req.body) : undefined;
        if (key) return next(new MakinaError("invalid_value", `The key '${key}' is not allowed anywhere in a request body.`, { param: key }));
        next();
      });
    },
  ];
}

/** Object keys a request body may not use, at any depth: they name parts of JavaScript's object model. */
const FORBIDDEN_KEYS = new Set(["__proto__", "constructor", "prototype"]);

/** Bytes without which a body cannot hold a forbidden key: the names themselves, or an escape that could spell one. */
const SUSPECT_BYTES = ["__proto__", "constructor", "prototype", "\\u"].map((s) => Buffer.from(s));

/** The first forbidden key anywhere in a parsed body (iteratively: bodies may nest deeply). */
function forbiddenKeyIn(body: unknown): string | undefined {
  const stack: unknown[] = [body];
  while (stack.length) {
    const value = stack.pop();
    if (value === null || typeof value !== "object") continue;
    for (const [k, v] of Object.entries(value)) {
      if (FORBIDDEN_KEYS.has(k)) return k;
      if (v !== null && typeof v === "object") stack.push(v);
    }
  }
  return undefined;
}

function bodyError(err: unknown, limitBytes: number): unknown {
  const type = (err as { type?: string }).type;
  if (type === "entity.too.large") {
    return new MakinaError("request_too_large", `The request body is larger than the limit of ${limitBytes} bytes.`);
  }
  if (type === "encoding.unsupported" || type === "charset.unsupported") {
    return new MakinaError("unsupported_media_type", "Unsupported body encoding: send the body as UTF-8 JSON without content encoding.", { cause: err });
  }
  if (type === "entity.parse.failed" || (err as { status?: number }).status === 400) {
    return new MakinaError("invalid_json", "We could not parse the JSON body of your request. The body must be valid UTF-8 JSON.", { cause: err });
  }
  if (type === "request.aborted") return new MakinaError("canceled", "The client closed the request.", { cause: err });
  return err;
}
