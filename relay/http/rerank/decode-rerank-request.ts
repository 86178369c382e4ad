import { MAX_RERANK_DOCUMENTS } from "../../../proto/index.js";
import type { PlannableRequest } from "../../routing/index.js";
import { modelOf } from "../chat/index.js";
import { describeValue, isPlainObject, refuse } from "../json-values.js";

/** A rerank request: the domain request (its `input.rerank` the query and documents), and how the results are written back. */
export interface RerankRequest extends PlannableRequest {
  /** The most results to answer, the most relevant first; all when absent. */
  topN: number | undefined;
  /** Whether each result carries its document's text. */
  returnDocuments: boolean;
}

/** Longest document, in characters (a 4 MiB body is the bound of them all). */
const MAX_TEXT_CHARS = 1024 * 1024;

/** Longest query, in characters: a reranker reads it with every document, within a context of a few thousand tokens. */
const MAX_QUERY_CHARS = 32 * 1024;

const { invalid, missing } = refuse;

/** The parameters the clients' shapes (vLLM's, llama.cpp's server's, Jina's, Cohere's v1 and v2) send and this API reads. */
const KNOWN = ["model", "query", "documents", "top_n", "return_documents", "user"];

/** Parameters of Cohere's API that shape what a reranker reads (chunks, fields, truncation): refused when set, never dropped. */
const REFUSED = ["max_chunks_per_doc", "max_tokens_per_doc", "rank_fields"];

/** A document as the clients send it: a string, or an object with its `text`. */
function document(v: unknown, i: number): string {
  const param = `documents[${i}]`;
  const text = isPlainObject(v) ? v.text : v;
  if (typeof text !== "string") throw invalid(param, `Invalid type for '${param}': expected a string or an object with a string 'text', but got ${describeValue(v)}.`);
  if (isPlainObject(v)) for (const k of Object.keys(v)) if (k !== "text") throw refuse.unknown(`${param}.${k}`);
  if (text.length > MAX_TEXT_CHARS) throw invalid(param, `Invalid '${param}': longer than ${MAX_TEXT_CHARS} characters.`);
  return text;
}

/** Checks a `/v1/rerank` body and makes it the domain request: no messages, the query and documents in `rerank`. */
export function decodeRerankRequest(body: unknown, defaults: { returnDocuments: boolean } = { returnDocuments: true }): RerankRequest {
  if (!isPlainObject(body)) throw refuse.notObject(body);
  for (const k of Object.keys(body)) {
    if (REFUSED.includes(k)) {
      if (body[k] !== null && body[k] !== undefined) throw refuse.unsupported(k, `The parameter '${k}' is not supported: send the documents as they should be read.`);
    } else if (!KNOWN.includes(k)) throw refuse.unknown(k);
  }
  const model = modelOf(body.model, "model");
  if (body.query === undefined || body.query === null) throw missing("query");
  if (typeof body.query !== "string") throw invalid("query", `Invalid type for 'query': expected a string, but got ${describeValue(body.query)}.`);
  if (body.query.trim() === "") throw invalid("query", "Invalid 'query': an empty query has nothing to rank the documents against.");
  if (body.query.length > MAX_QUERY_CHARS) throw invalid("query", `Invalid 'query': longer than ${MAX_QUERY_CHARS} characters (a reranker reads it with each document, within its context).`);
  if (body.documents === undefined || body.documents === null) throw missing("documents");
  if (!Array.isArray(body.documents)) throw invalid("documents", `Invalid type for 'documents': expected an array of strings or of objects with a 'text', but got ${describeValue(body.documents)}.`);
  if (body.documents.length === 0) throw invalid("documents", "Invalid 'documents': empty array. Expected an array with minimum length 1.");
  if (body.documents.length > MAX_RERANK_DOCUMENTS) throw invalid("documents", `Invalid 'documents': at most ${MAX_RERANK_DOCUMENTS} documents in one request, got ${body.documents.length}.`);
  const documents = body.documents.map(document);
  let topN: number | undefined;
  if (body.top_n !== undefined && body.top_n !== null) {
    if (typeof body.top_n !== "number" || !Number.isInteger(body.top_n) || body.top_n < 0) throw invalid("top_n", "Invalid 'top_n': an integer of at least 0 (0: every document, as vLLM reads it).");
    topN = body.top_n || undefined;
  }
  const returnDocuments = body.return_documents ?? defaults.returnDocuments;
  if (typeof returnDocuments !== "boolean") throw invalid("return_documents", `Invalid type for 'return_documents': expected a boolean, but got ${describeValue(returnDocuments)}.`);
  if (body.user !== undefined && body.user !== null && (typeof body.user !== "string" || body.user.length > 1024)) throw invalid("user", "Invalid 'user': a string of at most 1024 characters.");
  return {
    model,
    needs: ["rerank"],
    imagePart: undefined,
    // This API's names are the domain's.
    paramName: (param) => param,
    topN,
    returnDocuments,
    // `maxTokens` 1: an agent older than rerank, which would take this for a chat, generates one token at most.
    input: { messages: [], temperature: 1, topP: 1, maxTokens: 1, stop: [], presencePenalty: 0, frequencyPenalty: 0, stream: false, rerank: { query: body.query, documents } },
  };
}
