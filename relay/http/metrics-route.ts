import type { RequestHandler } from "express";
import { MakinaError } from "../../proto/index.js";
import type { RelayMetrics } from "../metrics/index.js";
import { isAdminToken, requestBearer } from "./auth/request-auth.js";

/**
 * `GET /metrics`: the Prometheus text format, for a scraper that sends the
 * relay's admin token as a bearer token (`authorization` in a scrape config).
 */
export function metricsRoute(metrics: RelayMetrics, adminTokenHash: () => string | undefined): RequestHandler {
  return (req, res, next) => {
    if (!isAdminToken(requestBearer(req), adminTokenHash)) {
      next(new MakinaError("invalid_admin_token", "The metrics need the admin token: `Authorization: Bearer <admin token>`."));
      return;
    }
    metrics.render().then(
      (text) => res.set({ "content-type": metrics.contentType, "cache-control": "no-store" }).send(text),
      (err: unknown) => next(err),
    );
  };
}
