import { Router } from "express";
import { authenticate } from "./authenticate.js";
import { listModels } from "./models-route.js";
import { chatCompletions, type ChatCompletionsDeps } from "./chat-completions-route.js";
import { jsonBody } from "../json-body.js";
import type { ApiKeyRecord } from "../../store/index.js";
import type { RelayMetrics } from "../../metrics/index.js";
import type { RequestHandler } from "express";

/** Records each chat request's outcome in the metrics when its response ends (refusals included). */
function measure(metrics: RelayMetrics): RequestHandler {
  return (_req, res, next) => {
    const startedAt = performance.now();
    const done = metrics.started();
    res.once("close", () => {
      const firstTokenAt = res.locals.firstTokenAt as number | undefined;
      done({
        model: (res.locals.model as string | undefined) ?? "",
        status: res.statusCode,
        keyId: (res.locals.apiKey as ApiKeyRecord | undefined)?.id ?? "",
        errorCode: (res.locals.errorCode as string | undefined) ?? null,
        durationSeconds: (performance.now() - startedAt) / 1000,
        firstTokenSeconds: firstTokenAt === undefined ? null : (firstTokenAt - startedAt) / 1000,
      });
    });
    next();
  };
}

export { validateChatRequest, type ChatRequest } from "./validate-chat-request.js";

/** Options of the OpenAI-compatible gateway router. */
export interface OpenAiRouterDeps extends ChatCompletionsDeps {
  /** Largest accepted request body, in bytes. */
  bodyLimitBytes: number;
}

/** The gateway: `/v1/models` and `/v1/chat/completions` behind bearer keys. */
export function openAiRouter(deps: OpenAiRouterDeps): Router {
  const router = Router();
  router.post("/v1/chat/completions", measure(deps.metrics));
  router.use("/v1", authenticate(deps.store), (_req, res, next) => {
    // Every response to a rate-limited key carries its x-ratelimit-* headers.
    res.set(deps.limiter.headers(res.locals.apiKey as ApiKeyRecord));
    next();
  }, ...jsonBody(deps.bodyLimitBytes));
  router.get("/v1/models", listModels(deps.store));
  router.post("/v1/chat/completions", chatCompletions(deps));
  return router;
}
