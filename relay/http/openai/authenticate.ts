import type { RequestHandler } from "express";
import { authenticateApiKey } from "../../keys/index.js";
import { apiKeyAuthorization } from "../api-key-header.js";
import type { GatewayDirectory } from "../../routing/index.js";

/**
 * Bearer-key authentication of the gateway, by the same directory chat completions use (refreshed for
 * every request, keys carrying their organization's default limits); the key lands in `res.locals.apiKey`.
 */
export function authenticate(directory: GatewayDirectory): RequestHandler {
  const check: RequestHandler = (req, res, next) => {
    try {
      // Anthropic's clients send the key as `x-api-key` (for `/v1/models` too).
      res.locals.apiKey = authenticateApiKey(directory, apiKeyAuthorization(req.headers));
      next();
    } catch (err) {
      next(err);
    }
  };
  return (req, res, next) => {
    const reload = directory.refresh();
    if (!reload) return check(req, res, next);
    reload.then(() => check(req, res, next), next);
  };
}
