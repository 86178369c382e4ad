import { Router } from "express";
import { authenticate } from "./authenticate.js";
import { listModels } from "./models-route.js";
import { jsonBody } from "../json-body.js";
import type { ApiKeyRecord, Store } from "../../store/index.js";
import type { RateLimiter } from "../../limits/index.js";

export { chatCompletions, type ChatCompletionsDeps } from "./chat-completions-route.js";
export { validateChatRequest, type ChatRequest } from "./validate-chat-request.js";

/** Options of the Express side of the gateway. */
export interface OpenAiRouterDeps {
  store: Store;
  limiter: RateLimiter;
  /** Largest accepted request body, in bytes. */
  bodyLimitBytes: number;
}

/**
 * The gateway's routes other than chat completions (which has a handler of its own, see
 * {@link chatCompletions}): `/v1/models` and every other `/v1` path behind bearer keys.
 */
export function openAiRouter(deps: OpenAiRouterDeps): Router {
  const router = Router();
  router.use("/v1", authenticate(deps.store), (_req, res, next) => {
    // Every response to a rate-limited key carries its x-ratelimit-* headers.
    res.set(deps.limiter.headers(res.locals.apiKey as ApiKeyRecord));
    next();
  }, ...jsonBody(deps.bodyLimitBytes));
  router.get("/v1/models", listModels(deps.store));
  return router;
}
