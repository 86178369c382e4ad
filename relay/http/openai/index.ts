import { Router } from "express";
import { authenticate } from "./authenticate.js";
import { listModels } from "./models-route.js";
import { chatCompletions, type ChatCompletionsDeps } from "./chat-completions-route.js";
import { jsonBody } from "../json-body.js";
import type { ApiKeyRecord } from "../../store/index.js";

export { validateChatRequest, type ChatRequest } from "./validate-chat-request.js";

/** Options of the OpenAI-compatible gateway router. */
export interface OpenAiRouterDeps extends ChatCompletionsDeps {
  /** Largest accepted request body, in bytes. */
  bodyLimitBytes: number;
}

/** The gateway: `/v1/models` and `/v1/chat/completions` behind bearer keys. */
export function openAiRouter(deps: OpenAiRouterDeps): Router {
  const router = Router();
  router.use("/v1", authenticate(deps.store), (_req, res, next) => {
    // Every response to a rate-limited key carries its x-ratelimit-* headers.
    res.set(deps.limiter.headers(res.locals.apiKey as ApiKeyRecord));
    next();
  }, ...jsonBody(deps.bodyLimitBytes));
  router.get("/v1/models", listModels(deps.store));
  router.post("/v1/chat/completions", chatCompletions(deps));
  return router;
}
