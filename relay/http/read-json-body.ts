import type { IncomingMessage } from "node:http";
import { brotliDecompressSync, gunzipSync, inflateSync } from "node:zlib";
import { MakinaError } from "../../proto/index.js";

/** Object keys a request body may not use, at any depth: they name parts of JavaScript's object model. */
const FORBIDDEN_KEYS = new Set(["__proto__", "constructor", "prototype"]);

/** Bytes without which a body cannot hold a forbidden key: the names themselves, or an escape that could spell one. */
const SUSPECT_BYTES = ["__proto__", "constructor", "prototype", "\\u"].map((s) => Buffer.from(s));

const DECOMPRESS: Record<string, (buf: Buffer, options: { maxOutputLength: number }) => Buffer> = {
  gzip: gunzipSync,
  "x-gzip": gunzipSync,
  deflate: inflateSync,
  br: brotliDecompressSync,
};

/**
 * Reads and parses a JSON request body, with the same refusals everywhere (gateway, sign-in, admin API):
 * 415 `unsupported_media_type` when the Content-Type is not JSON, its charset not UTF-8 or its encoding
 * unknown; 413 `request_too_large` past `limitBytes` (before and after decompression); 400 `invalid_json`
 * for bytes that are not UTF-8 or not JSON; 400 `invalid_value` for a forbidden key at any depth.
 * Resolves `undefined` when the request has no body.
 */
export async function readJsonBody(req: IncomingMessage, limitBytes: number): Promise<unknown> {
  const length = req.headers["content-length"];
  if (req.headers["transfer-encoding"] === undefined && (length ?? "0") === "0") return undefined;
  const type = req.headers["content-type"] ?? "";
  const [mime = "", ...params] = type.split(";").map((p) => p.trim().toLowerCase());
  if (mime !== "application/json") {
    throw new MakinaError("unsupported_media_type", "Invalid Content-Type header: send the body as JSON with `Content-Type: application/json`.");
  }
  const charset = params.find((p) => p.startsWith("charset="))?.slice(8).replace(/^"|"$/g, "");
  const encoding = (req.headers["content-encoding"] ?? "identity").trim().toLowerCase();
  if ((charset !== undefined && charset !== "utf-8" && charset !== "utf8") || (encoding !== "identity" && !Object.hasOwn(DECOMPRESS, encoding))) {
    throw new MakinaError("unsupported_media_type", "Unsupported body encoding: send the body as UTF-8 JSON without content encoding.");
  }
  const tooLarge = () => new MakinaError("request_too_large", `The request body is larger than the limit of ${limitBytes} bytes.`);
  if (length !== undefined && Number(length) > limitBytes) throw tooLarge();

  let raw = await readAll(req, limitBytes, tooLarge);
  if (encoding !== "identity") {
    try {
      raw = DECOMPRESS[encoding]!(raw, { maxOutputLength: limitBytes });
    } catch (err) {
      if ((err as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") throw tooLarge();
      throw new MakinaError("invalid_json", `We could not decompress the ${encoding} body of your request.`, { cause: err });
    }
  }
  let text: string;
  let body: unknown;
  try {
    // JSON is UTF-8: a body with invalid bytes is refused rather than silently repaired.
    text = new TextDecoder("utf-8", { fatal: true }).decode(raw);
    body = JSON.parse(text);
  } catch (err) {
    throw new MakinaError("invalid_json", "We could not parse the JSON body of your request. The body must be valid UTF-8 JSON.", { cause: err });
  }
  // Only a body whose bytes could spell a forbidden key is walked.
  const key = SUSPECT_BYTES.some((b) => raw.includes(b)) ? forbiddenKeyIn(body) : undefined;
  if (key) throw new MakinaError("invalid_value", `The key '${key}' is not allowed anywhere in a request body.`, { param: key });
  return body;
}

/**
 * The whole body, refusing it once it passes `limitBytes`. A body that came with its headers (most do) is
 * taken from the request's buffer as it stands once their packet is parsed, without waiting for the stream
 * to flow and end over further turns of the event loop.
 */
async function readAll(req: IncomingMessage, limitBytes: number, tooLarge: () => MakinaError): Promise<Buffer> {
  // The request is emitted as its headers are parsed; the body in their packet is parsed right after, before
  // this continues (a microtask runs once the socket's read callback has returned).
  const length = req.headers["content-length"] === undefined ? Number.NaN : Number(req.headers["content-length"]);
  const whole = () => req.readableFlowing === null && !req.readableEnded && (req.complete || req.readableLength === length);
  if (!whole()) await undefined;
  if (whole()) {
    if (req.readableLength > limitBytes) {
      req.pause();
      throw tooLarge();
    }
    // All of it is in the buffer: taken at once.
    return (req.read() as Buffer | null) ?? Buffer.alloc(0);
  }
  return streamAll(req, limitBytes, tooLarge);
}

/** The whole body as it streams in, refusing it once it passes `limitBytes`. */
function streamAll(req: IncomingMessage, limitBytes: number, tooLarge: () => MakinaError): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("close", onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        cleanup();
        // Stop reading: the rest of the body is dropped by Node's server once the answer is sent.
        req.pause();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(new MakinaError("canceled", "The client closed the request.", { cause: err }));
    };
    const onClose = () => {
      if (req.complete) return;
      cleanup();
      reject(new MakinaError("canceled", "The client closed the request."));
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("close", onClose);
  });
}

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
