import { MakinaError } from "../../../proto/index.js";
import type { GatewayCodec } from "../gateway/gateway-codec.js";
import { sendError } from "../send-json.js";
import { decodeEmbeddingsRequest, type EmbeddingsRequest } from "./decode-embeddings-request.js";

/** A vector as the vendor's base64: its numbers as little-endian 32-bit floats. */
function base64(values: number[]): string {
  return Buffer.from(new Float32Array(values).buffer).toString("base64");
}

/**
 * `POST /v1/embeddings`, as the vendor defines it, onto the gateway's one path: the stack's runtime answers a
 * vector per input over the link, paced and cancellable as tokens are, and the inputs' tokens are the usage.
 */
export const embeddingsCodec: GatewayCodec<EmbeddingsRequest> = {
  label: "embeddings",
  api: "embeddings",
  authorization: (req) => req.headers.authorization,
  decode: decodeEmbeddingsRequest,
  answerId: () => "",
  answer(request, meta, { text, calls, vectors, usage }) {
    // An agent older than embeddings answers them as a chat (of one token): no vectors, and a clear reason.
    if (text !== "" || calls.length > 0) throw new MakinaError("runtime_unavailable", "The agent on this stack's machine is older than this relay and has no embeddings: update it.", { retryAfterMs: 60_000 });
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
