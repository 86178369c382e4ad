import express, { type Express } from "express";
import type { Logger } from "../../proto/index.js";
import type { ControlPlane } from "../control/index.js";
import type { AgentRegistry } from "../grpc/index.js";
import type { RateLimiter } from "../limits/index.js";
import type { Store } from "../store/index.js";
import { adminRouter } from "./admin/admin-router.js";
import { errorHandler, unknownUrl } from "./error-handler.js";
import { openAiRouter } from "./openai/index.js";
import { requestId } from "./request-id.js";

/** Everything the relay's HTTP side needs, passed in by the composition root. */
export interface RelayAppDeps {
  store: Store;
  registry: AgentRegistry;
  control: ControlPlane;
  log: Logger;
  limiter: RateLimiter;
  adminTokenHash: () => string | undefined;
  limits: { bodyLimitBytes: number; firstTokenTimeoutMs: number; requestTimeoutMs: number; defaultCompletionEstimate: number };
}

/** Builds the relay's Express application: health, gateway, admin API, and the error envelope. */
export function createRelayApp(deps: RelayAppDeps): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use(requestId());
  app.get("/health", (_req, res) => {
    res.json({ status: "ok" });
  });
  app.use(openAiRouter({ store: deps.store, registry: deps.registry, log: deps.log, limiter: deps.limiter, ...deps.limits }));
  app.use(adminRouter({ store: deps.store, control: deps.control, adminTokenHash: deps.adminTokenHash }));
  app.use(unknownUrl());
  app.use(errorHandler(deps.log));
  return app;
}
