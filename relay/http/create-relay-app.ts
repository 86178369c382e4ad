import type { RequestListener } from "node:http";
import express from "express";
import type { Logger } from "../../proto/index.js";
import type { ControlPlane } from "../control/index.js";
import type { AgentRegistry } from "../link/index.js";
import type { GatewayDirectory } from "../routing/index.js";
import type { RateLimiter } from "../limits/index.js";
import type { Store } from "../store/index.js";
import type { WebSessions } from "../auth/index.js";
import type { EventBus } from "../events/index.js";
import type { UsageRecorder } from "../usage/index.js";
import type { RelayMetrics } from "../metrics/index.js";
import { metricsRoute } from "./metrics-route.js";
import { adminRouter } from "./admin/admin-router.js";
import { authRouter } from "./auth/auth-router.js";
import { findWebDir, webApp } from "./web/web-app.js";
import { errorHandler, unknownUrl } from "./error-handler.js";
import { chatCompletions, openAiRouter } from "./openai/index.js";
import { requestId } from "./request-id.js";

/** Everything the relay's HTTP side needs, passed in by the composition root. */
export interface RelayAppDeps {
  store: Store;
  registry: AgentRegistry;
  /** The gateway's keys and routes, kept in memory and refreshed for every request. */
  directory: GatewayDirectory;
  control: ControlPlane;
  log: Logger;
  limiter: RateLimiter;
  sessions: WebSessions;
  events: EventBus;
  usage: UsageRecorder;
  metrics: RelayMetrics;
  adminTokenHash: () => string | undefined;
  /** Where the built web application is; absent to find it next to the relay's code. */
  webDir?: string | null;
  /** Trust `X-Forwarded-*` from a reverse proxy on loopback. */
  trustProxy?: boolean;
  limits: { bodyLimitBytes: number; firstTokenTimeoutMs: number; requestTimeoutMs: number; defaultCompletionEstimate: number };
}

/** The path of the gateway's hot route, matched exactly (query string aside) before Express. */
const CHAT_PATH = "/v1/chat/completions";

/**
 * Builds the relay's HTTP handler: chat completions straight to their own handler, and everything else
 * (health, models, sign-in, admin API, web application, the error envelope) through Express.
 */
export function createRelayApp(deps: RelayAppDeps): RequestListener {
  const chat = chatCompletions({
    directory: deps.directory,
    registry: deps.registry,
    log: deps.log,
    limiter: deps.limiter,
    usage: deps.usage,
    metrics: deps.metrics,
    ...deps.limits,
  });
  const app = express();
  app.disable("x-powered-by");
  if (deps.trustProxy) app.set("trust proxy", "loopback");
  app.set("etag", false);
  app.use(requestId());
  app.get("/health", (_req, res) => {
    res.json({ status: "ok" });
  });
  app.get("/metrics", metricsRoute(deps.metrics, deps.adminTokenHash));
  // Spellings of the path that Express also matches (another case, a trailing slash) reach the same handler.
  app.post(CHAT_PATH, (req, res) => chat(req, res));
  app.use(openAiRouter({ store: deps.store, limiter: deps.limiter, bodyLimitBytes: deps.limits.bodyLimitBytes }));
  app.use(authRouter({ store: deps.store, sessions: deps.sessions }));
  app.use(adminRouter({ store: deps.store, control: deps.control, sessions: deps.sessions, events: deps.events, usage: deps.usage, adminTokenHash: deps.adminTokenHash }));
  app.use(webApp(deps.webDir === undefined ? findWebDir() : deps.webDir));
  app.use(unknownUrl());
  app.use(errorHandler(deps.log));
  return (req, res) => {
    const url = req.url ?? "";
    const path = url.length === CHAT_PATH.length ? url : url.split("?", 1)[0];
    if (path === CHAT_PATH && req.method === "POST") chat(req, res);
    else app(req, res);
  };
}
