import { MAX_EMBED_INPUTS, MakinaError, type EmbedInput } from "../../../proto/index.js";
import type { PlannableRequest } from "../../routing/index.js";
import type { GatewayCodec } from "../gateway/gateway-codec.js";
import { describeValue, isPlainObject } from "../gateway/translate-body.js";
import { sendError } from "../send-json.js";

/** An embeddings request: the domain request (its `input.embed` the inputs), and how the vectors are written back. */
export interface EmbeddingsRequest extends PlannableRequest {
  encoding: "float" | "base64";
}

/** Longest text input, in characters (a 4 MiB body is the bound of them all). */
const MAX_TEXT_CHARS = 1024 * 1024;

const invalid = (param: string, message: string) => new MakinaError("invalid_value", message, { param });

function tokenIds(v: unknown[], param: string): number[] {
  if (v.length === 0) throw invalid(param, `Invalid '${param}': an empty array of tokens has nothing to embed.`);
  for (const t of v) if (typeof t !== "number" || !Number.isInteger(t) || t < 0 || t > 0xffffffff) throw invalid(param, `Invalid '${param}': token ids are integers from 0 to 4294967295.`);
  return v as number[];
}

function text(v: unknown, param: string): EmbedInput {
  if (typeof v !== "string") throw invalid(param, `Invalid type for '${param}': expected a string, but got ${describeValue(v)}.`);
  if (v === "") throw invalid(param, `Invalid '${param}': an empty string has nothing to embed.`);
  if (v.length > MAX_TEXT_CHARS) throw invalid(param, `Invalid '${param}': longer than ${MAX_TEXT_CHARS} characters.`);
  return { text: v, tokens: [] };
}

/** `input` as the vendor takes it: a string, an array of strings, an array of token ids, or an array of those. */
function inputs(v: unknown): EmbedInput[] {
  if (v === undefined || v === null) throw new MakinaError("missing_required_parameter", "Missing required parameter: 'input'.", { param: "input" });
  if (typeof v === "string") return [text(v, "input")];
  if (!Array.isArray(v)) throw invalid("input", `Invalid type for 'input': expected a string, an array of strings, or token arrays, but got ${describeValue(v)}.`);
  if (v.length === 0) throw invalid("input", "Invalid 'input': empty array. Expected an array with minimum length 1.");
  if (v.length > MAX_EMBED_INPUTS) throw invalid("input", `Invalid 'input': at most ${MAX_EMBED_INPUTS} inputs in one request, got ${v.length}.`);
  if (typeof v[0] === "number") return [{ text: "", tokens: tokenIds(v, "input") }];
  return v.map((item: unknown, i) => (Array.isArray(item) ? { text: "", tokens: tokenIds(item, `input[${i}]`) } : text(item, `input[${i}]`)));
}

/** A vector as the vendor's base64: its numbers as little-endian 32-bit floats. */
function base64(values: number[]): string {
  return Buffer.from(new Float32Array(values).buffer).toString("base64");
}

/** Checks a `/v1/embeddings` body and makes it the domain request: no messages, its inputs in `embed`. */
export function decodeEmbeddingsRequest(body: unknown): EmbeddingsRequest {
  if (!isPlainObject(body)) throw new MakinaError("invalid_value", `The request body must be a JSON object, but got ${describeValue(body)}.`);
  for (const k of Object.keys(body)) if (!["model", "input", "encoding_format", "dimensions", "user"].includes(k)) throw new MakinaError("unknown_parameter", `Unrecognized request argument supplied: ${k.slice(0, 256)}`, { param: k.slice(0, 256) });
  if (body.model === undefined || body.model === null) throw new MakinaError("missing_required_parameter", "Missing required parameter: 'model'.", { param: "model" });
  if (typeof body.model !== "string" || body.model === "" || body.model.length > 256) throw invalid("model", `Invalid type for 'model': expected a non-empty string of at most 256 characters, but got ${describeValue(body.model)}.`);
  const embed = inputs(body.input);
  const encoding = body.encoding_format ?? "float";
  if (encoding !== "float" && encoding !== "base64") throw invalid("encoding_format", "Invalid value for 'encoding_format': expected one of 'float', 'base64'.");
  const needs = ["embeddings"];
  let dimensions = 0;
  if (body.dimensions !== undefined && body.dimensions !== null) {
    if (typeof body.dimensions !== "number" || !Number.isInteger(body.dimensions) || body.dimensions < 1 || body.dimensions > 65_536) throw invalid("dimensions", "Invalid 'dimensions': an integer from 1 to 65536.");
    dimensions = body.dimensions;
    needs.push("dimensions");
  }
  if (body.user !== undefined && body.user !== null && (typeof body.user !== "string" || body.user.length > 1024)) throw invalid("user", "Invalid 'user': a string of at most 1024 characters.");
  return {
    model: body.model,
    needs,
    imagePart: undefined,
    encoding,
    input: { messages: [], temperature: 1, topP: 1, maxTokens: 0, stop: [], presencePenalty: 0, frequencyPenalty: 0, stream: false, embed, ...(dimensions ? { dimensions } : {}) },
  };
}

/**
 * `POST /v1/embeddings`, as the vendor defines it, onto the gateway's one path: the stack's runtime answers a
 * vector per input over the link, paced and cancellable as tokens are, and the inputs' tokens are the usage.
 */
export const embeddingsCodec: GatewayCodec<EmbeddingsRequest> = {
  label: "embeddings",
  authorization: (req) => req.headers.authorization,
  decode: decodeEmbeddingsRequest,
  answerId: () => "",
  answer(request, meta, { vectors, usage }) {
    const count = request.input.embed!.length;
    const data = Array.from({ length: count }, (_, index) => {
      const values = vectors[index];
      if (!values) throw new MakinaError("internal_error", `The machine answered no vector for input ${index}.`);
      return { object: "embedding", index, embedding: request.encoding === "base64" ? base64(values) : values };
    });
    return { object: "list", data, model: meta.model, usage: { prompt_tokens: usage.promptTokens, total_tokens: usage.promptTokens } };
  },
  streamEncoder() {
    throw new MakinaError("internal_error", "Embeddings are never streamed.");
  },
  sendError,
};
