import { Router } from "express";
import { authenticate } from "./authenticate.js";
import { listModels } from "./models-route.js";
import { jsonBody } from "../json-body.js";
import type { ApiKeyRecord } from "../../keys/index.js";
import type { Limiter } from "../../limits/index.js";
import type { GatewayDirectory } from "../../routing/index.js";

export { chatCompletionsCodec } from "./chat-completions-codec.js";
export { responsesCodec } from "./responses-codec.js";
export { embeddingsCodec } from "./embeddings-codec.js";
export { decodeEmbeddingsRequest, type EmbeddingsRequest } from "./decode-embeddings-request.js";
export { decodeResponsesRequest, type ResponsesRequest } from "./decode-responses-request.js";
export { decodeChatRequest } from "./decode-chat-request.js";

/** Options of the Express side of the gateway. */
export interface OpenAiRouterDeps {
  /** Keys and routes, refreshed for every request: the same ones chat completions read. */
  directory: GatewayDirectory;
  limiter: Limiter;
  /** Largest accepted request body, in bytes. */
  bodyLimitBytes: number;
}

/**
 * The gateway's routes other than chat completions (which has a handler of its own, see
 * {@link chatCompletionsCodec}): `/v1/models` and every other `/v1` path behind bearer keys.
 */
export function openAiRouter(deps: OpenAiRouterDeps): Router {
  const router = Router();
  router.use("/v1", authenticate(deps.directory), (_req, res, next) => {
    // Every response to a rate-limited key carries its x-ratelimit-* headers (read from Redis when shared).
    const headers = deps.limiter.headers(res.locals.apiKey as ApiKeyRecord);
    if (!(headers instanceof Promise)) {
      res.set(headers);
      return next();
    }
    headers.then((h) => {
      res.set(h);
      next();
    }, next);
  }, ...jsonBody(deps.bodyLimitBytes));
  router.get("/v1/models", listModels(deps.directory));
  return router;
}
