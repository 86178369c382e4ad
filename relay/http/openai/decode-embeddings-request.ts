import { MAX_EMBED_INPUTS, type EmbedInput } from "../../../proto/index.js";
import type { PlannableRequest } from "../../routing/index.js";
import { modelOf } from "../chat/index.js";
import { describeValue, isPlainObject, refuse } from "../json-values.js";

/** An embeddings request: the domain request (its `input.embed` the inputs), and how the vectors are written back. */
export interface EmbeddingsRequest extends PlannableRequest {
  encoding: "float" | "base64";
}

/** Longest text input, in characters (a 4 MiB body is the bound of them all). */
const MAX_TEXT_CHARS = 1024 * 1024;

const { invalid, missing } = refuse;

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
  if (v === undefined || v === null) throw missing("input");
  if (typeof v === "string") return [text(v, "input")];
  if (!Array.isArray(v)) throw invalid("input", `Invalid type for 'input': expected a string, an array of strings, or token arrays, but got ${describeValue(v)}.`);
  if (v.length === 0) throw invalid("input", "Invalid 'input': empty array. Expected an array with minimum length 1.");
  if (v.length > MAX_EMBED_INPUTS) throw invalid("input", `Invalid 'input': at most ${MAX_EMBED_INPUTS} inputs in one request, got ${v.length}.`);
  if (typeof v[0] === "number") return [{ text: "", tokens: tokenIds(v, "input") }];
  // Texts or token arrays, as the vendor takes them: one kind in one request (servers behind refuse a mix).
  const tokens = Array.isArray(v[0]);
  return v.map((item: unknown, i) => {
    if (Array.isArray(item) !== tokens) throw invalid(`input[${i}]`, `Invalid 'input[${i}]': the inputs mix texts and token arrays; send one kind in one request.`);
    return tokens ? { text: "", tokens: tokenIds(item as unknown[], `input[${i}]`) } : text(item, `input[${i}]`);
  });
}

/** Checks a `/v1/embeddings` body and makes it the domain request: no messages, its inputs in `embed`. */
export function decodeEmbeddingsRequest(body: unknown): EmbeddingsRequest {
  if (!isPlainObject(body)) throw refuse.notObject(body);
  for (const k of Object.keys(body)) if (!["model", "input", "encoding_format", "dimensions", "user"].includes(k)) throw refuse.unknown(k);
  const model = modelOf(body.model, "model");
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
    model,
    needs,
    imagePart: undefined,
    // This API's names are the domain's.
    paramName: (param) => param,
    encoding,
    // `maxTokens` 1: an agent older than embeddings, which would take this for a chat, generates one token at most.
    input: { messages: [], temperature: 1, topP: 1, maxTokens: 1, stop: [], presencePenalty: 0, frequencyPenalty: 0, stream: false, embed, ...(dimensions ? { dimensions } : {}) },
  };
}
