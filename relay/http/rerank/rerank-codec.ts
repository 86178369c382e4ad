import { MakinaError } from "../../../proto/index.js";
import type { GatewayCodec } from "../gateway/gateway-codec.js";
import { sendError } from "../send-json.js";
import { decodeRerankRequest, type RerankRequest } from "./decode-rerank-request.js";

/**
 * `POST /v1/rerank` (and `/v2/rerank`), in the shape vLLM, llama.cpp's server, Jina and Cohere share, onto the
 * gateway's one path: the stack's runtime scores each document against the query over the link, and the tokens
 * it read are the usage. The results come the most relevant first, `top_n` of them.
 */
export const rerankCodec: GatewayCodec<RerankRequest> = {
  label: "rerank",
  api: "rerank",
  authorization: (req) => req.headers.authorization,
  decode: decodeRerankRequest,
  answerId: (ids) => `rerank-${ids.next(24)}`,
  answer(request, meta, { text, calls, scores, usage }) {
    // An agent older than rerank answers it as a chat (of one token, maybe empty): no scores, and a clear reason.
    if (text !== "" || calls.length > 0 || scores.length === 0) throw new MakinaError("runtime_unavailable", "The agent on this stack's machine is older than this relay and has no rerank: update it.", { retryAfterMs: 60_000 });
    const { documents } = request.input.rerank!;
    const results = documents.map((document, index) => {
      const score = scores[index];
      if (score === undefined) throw new MakinaError("internal_error", `The machine answered no score for document ${index}.`);
      return { index, relevance_score: score, ...(request.returnDocuments ? { document: { text: document } } : {}) };
    });
    // The most relevant first; equal scores in the documents' order.
    results.sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index);
    return { id: meta.id, model: meta.model, results: request.topN === undefined ? results : results.slice(0, request.topN), usage: { prompt_tokens: usage.promptTokens, total_tokens: usage.promptTokens } };
  },
  streamEncoder() {
    throw new MakinaError("internal_error", "Rerank answers are never streamed.");
  },
  sendError,
};

/** `POST /v2/rerank`: the same, as Cohere's v2 client calls it, which answers no documents unless asked. */
export const rerankV2Codec: GatewayCodec<RerankRequest> = { ...rerankCodec, decode: (body) => decodeRerankRequest(body, { returnDocuments: false }) };
