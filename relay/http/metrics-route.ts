import type { Request, RequestHandler } from "express";
import { MakinaError } from "../../proto/index.js";
import type { RelayMetrics } from "../metrics/index.js";
import { hashesEqual, hashSecret } from "../keys/index.js";
import { isAdminToken, requestBearer } from "./auth/request-auth.js";

/**
 * `GET /metrics`: the Prometheus text format, for a scraper that sends as a bearer token (`authorization` in a
 * scrape config) the scrape token (`MAKINA_METRICS_TOKEN_FILE`: it reads the metrics and nothing else) or the
 * relay's admin token.
 */
export function metricsRoute(metrics: RelayMetrics, adminTokenHash: () => string | undefined, scrapeTokenHash?: string): RequestHandler {
  return (req, res, next) => {
    if (!readsMetrics(req, adminTokenHash, scrapeTokenHash)) {
      next(new MakinaError("invalid_admin_token", "The metrics need the scrape token or the admin token: `Authorization: Bearer <token>`."));
      return;
    }
    metrics.render().then(
      (text) => res.set({ "content-type": metrics.contentType, "cache-control": "no-store" }).send(text),
      (err: unknown) => next(err),
    );
  };
}

/** Whether a request carries the scrape token or the admin token: what reads `/metrics` and `/health`'s detail. */
export function readsMetrics(req: Request, adminTokenHash: () => string | undefined, scrapeTokenHash?: string): boolean {
  const bearer = requestBearer(req);
  const scrape = scrapeTokenHash !== undefined && bearer !== undefined && hashesEqual(hashSecret(bearer), scrapeTokenHash);
  return scrape || isAdminToken(bearer, adminTokenHash);
}
