import type { ErrorRequestHandler, RequestHandler } from "express";
import { MakinaError, type Logger } from "../../proto/index.js";
import { storageError, type StorageHealth } from "../health/index.js";
import { anthropicShape } from "./anthropic/index.js";
import { sendError } from "./send-json.js";

/** Answers unknown paths: 404 `unknown_url` (or `unsupported_endpoint` for the legacy completions endpoint). */
export function unknownUrl(): RequestHandler {
  return (req, _res, next) => {
    if (req.method === "POST" && req.path === "/v1/completions") {
      next(new MakinaError("unsupported_endpoint", "The legacy completions endpoint POST /v1/completions is not supported; use POST /v1/chat/completions."));
      return;
    }
    if (req.path.startsWith("/v1/responses/")) {
      next(new MakinaError("not_found", "This gateway does not keep responses: none can be fetched, listed, canceled or deleted. Send the whole conversation in each request's 'input'."));
      return;
    }
    next(new MakinaError("unknown_url", `Unknown request URL: ${req.method} ${req.path}. Please check the URL for typos.`));
  };
}

/**
 * Renders every error in the OpenAI envelope (in Anthropic's under `/v1/messages`, whose clients read that one);
 * unexpected ones are logged, never shown; database refusals are reported to `storage`.
 */
export function errorHandler(log: Logger, storage?: StorageHealth): ErrorRequestHandler {
  return (err, req, res, _next) => {
    if (storage && storageError(err)) storage.failed("admin write", err);
    const anthropic = req.path === "/v1/messages" || req.path.startsWith("/v1/messages/");
    res.locals.errorCode = sendError(res, err, log, res.locals.requestId, anthropic ? anthropicShape : undefined);
  };
}
