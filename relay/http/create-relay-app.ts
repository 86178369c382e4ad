import { isIP } from "node:net";
import type { RequestListener } from "node:http";
import express, { type Express } from "express";
import { MakinaError, type Logger } from "../../proto/index.js";
import type { ControlPlane } from "../control/index.js";
import type { AdmissionGate, GatewayDirectory, InferenceTarget } from "../routing/index.js";
import { RefusalBudget, type Limiter } from "../limits/index.js";
import type { StorageHealth } from "../health/index.js";
import type { LinkedModels } from "../link/index.js";
import type { WebSessions } from "../auth/index.js";
import type { EventBus } from "../events/index.js";
import type { RequestLog, UsageRecorder } from "../usage/index.js";
import type { RelayMetrics } from "../metrics/index.js";
import { metricsRoute, readsMetrics } from "./metrics-route.js";
import { agentCheckRouter, findInstallDir, installRouter, loadInstallFiles, type InstallFiles } from "./install/index.js";
import { adminRouter } from "./admin/admin-router.js";
import { authRouter } from "./auth/auth-router.js";
import { findWebDir, webApp } from "./web/web-app.js";
import { errorHandler, unknownUrl } from "./error-handler.js";
import { chatCompletionsCodec, embeddingsCodec, openAiRouter, responsesCodec } from "./openai/index.js";
import { rerankCodec, rerankV2Codec } from "./rerank/index.js";
import { gatewayRoute, type GatewayDeps } from "./gateway/index.js";
import { RequestsInFlight } from "./gateway/requests-in-flight.js";
import { countTokensCodec, messagesCodec } from "./anthropic/index.js";
import { requestId } from "./request-id.js";

/** Everything the relay's HTTP side needs, passed in by the composition root. */
export interface RelayAppDeps {
  /** Where the gateway sends a machine's requests: its link here, or the relay holding it (the machine seam). */
  targets: { get(machineId: string): InferenceTarget | undefined };
  /**
   * The relays' bus, when this relay is joined to others (`--nats`): `/health` says whether it is reachable, and
   * when it was joined beyond loopback with neither credentials nor TLS (`--nats-insecure`).
   */
  fleet?: { readonly connected: boolean; readonly insecure: boolean };
  /** The gateway's keys and routes, kept in memory and refreshed for every request. */
  directory: GatewayDirectory;
  control: ControlPlane;
  log: Logger;
  limiter: Limiter;
  /** True when token budgets are set and counted by each of several relays on its own (a shared database without Redis). */
  budgetsPerRelay?: () => boolean;
  sessions: WebSessions;
  events: EventBus;
  usage: UsageRecorder;
  /** The gateway's requests, for the request log. */
  requests: RequestLog;
  metrics: RelayMetrics;
  adminTokenHash: () => string | undefined;
  /** Where the built web application is; absent to find it next to the relay's code. */
  webDir?: string | null;
  /** The install script and agent package served to joining machines; absent to find them next to the relay's code. */
  install?: InstallFiles;
  /** What the database refused lately, for `/health`; admin writes it refuses are reported there too. */
  storage?: StorageHealth;
  /** Trust `X-Forwarded-*` from a reverse proxy on loopback. */
  trustProxy?: boolean;
  /** How often a live event stream sends a keepalive and checks its session again. @default 15000 */
  eventsKeepaliveMs?: number;
  /** The hash of the token that reads `/metrics` and nothing else, if one is set. */
  metricsTokenHash?: string;
  /** The machines linked to this relay and their models, loaded or not: `/health`'s detail for the admin or scrape token. */
  linked?: () => LinkedModels;
  limits: { bodyLimitBytes: number; firstTokenTimeoutMs: number; loadTimeoutMs: number; flexQueueTimeoutMs: number; requestTimeoutMs: number; defaultCompletionEstimate: number };
  /** Requests in flight per stack and machine, and their queues. */
  gate: AdmissionGate;
  /** Aborted when the relay's drain period is over: the gateway ends what is still in flight, each with its answer. */
  ending?: AbortSignal;
}

/** The path of the gateway's hottest route. */
const CHAT_PATH = "/v1/chat/completions";

/** The relay's HTTP handlers: the public one, and the admin one when the admin API has a listener of its own. */
export interface RelayApps {
  /** The gateway (`/v1`, `/health`), and with a shared listener also the admin API, sign-in, web application and `/metrics`. */
  public: RequestListener;
  /** The admin API, sign-in, web application, `/metrics` and `/health`, for their own listener; null when shared. */
  admin: RequestListener | null;
  /** What joining machines fetch (`/install.sh`, `/install/…`, `/agent/v1/check`, `/health`), for the TLS install listener; null when the public one serves it. */
  install: RequestListener | null;
}

/** The paths of what joining machines fetch. */
const INSTALL_PATHS = ["/install.sh", "/install/:file", "/agent/v1/check"];

/**
 * Builds the relay's HTTP handlers: chat completions straight to their own handler, and everything else
 * (health, models, sign-in, admin API, web application, the error envelope) through Express. With
 * `separateAdmin`, the admin API and the web application answer only on the admin handler, and the public
 * one knows nothing of them (404 like any unknown URL).
 */
export function createRelayApp(deps: RelayAppDeps, options: { separateAdmin?: boolean; separateInstall?: boolean } = {}): RelayApps {
  const gateway = gatewayDeps(deps);
  const chat = gatewayRoute(gateway, chatCompletionsCodec);
  const messages = gatewayRoute(gateway, messagesCodec);
  const responses = gatewayRoute(gateway, responsesCodec);
  const embeddings = gatewayRoute(gateway, embeddingsCodec);
  const countTokens = gatewayRoute(gateway, countTokensCodec);
  const rerank = gatewayRoute(gateway, rerankCodec);
  const rerankV2 = gatewayRoute(gateway, rerankV2Codec);
  // The gateway's routes, matched exactly (query string aside) before Express: its hot paths skip Express's router.
  const gatewayPaths = new Map<string, RequestListener>([
    [CHAT_PATH, chat],
    ["/v1/embeddings", embeddings],
    ["/v1/responses", responses],
    ["/v1/messages", messages],
    ["/v1/messages/count_tokens", countTokens],
    // Rerank as vLLM and llama.cpp's server serve it, and under Cohere's v2 path (documents back only when asked).
    ["/v1/rerank", rerank],
    ["/v2/rerank", rerankV2],
  ]);
  const install = deps.install ?? loadInstallFiles(findInstallDir());
  /** An app with what every listener serves; `operator`: the one that also serves `/metrics` (and `/health`'s detail). */
  const base = (operator: boolean) => {
    const app = express();
    app.disable("x-powered-by");
    if (deps.trustProxy) app.set("trust proxy", "loopback");
    app.set("etag", false);
    app.use(requestId());
    // Over HTTPS (its own certificate, or a proxy it trusts saying so), browsers are told to come back only so;
    // not for localhost or an address (a year of HSTS on localhost would hold every port of it to HTTPS).
    app.use((req, res, next) => {
      if (req.secure && req.hostname !== "localhost" && isIP(req.hostname.replace(/^\[|\]$/g, "")) === 0) res.setHeader("strict-transport-security", "max-age=31536000");
      next();
    });
    app.get("/health", (req, res) => {
      // The gateway serves while its database refuses writes: still 200, with what is wrong.
      // Limits applied per relay because Redis is away: still 200, saying so.
      const details = healthDetails(deps);
      // A relay that may have missed other relays' changes refuses the gateway's requests: 503 here too, so a
      // load balancer sends them to another relay meanwhile.
      if (!deps.directory.leaseHeld) {
        res.status(503).json({ status: "unavailable", changes: "lost touch with the database's change feed; refusing requests until caught up", ...details });
        return;
      }
      const status = Object.keys(details).length > 0 ? { status: "degraded", ...details } : { status: "ok" };
      // The machines and models linked here are the operator's to see (the admin or scrape token), where `/metrics` is
      // served, not an anonymous caller's; never kept by a cache in between.
      res.set({ "cache-control": "no-store", vary: "Authorization" });
      res.json(operator && deps.linked && readsMetrics(req, deps.adminTokenHash, deps.metricsTokenHash) ? { ...status, linked: deps.linked() } : status);
    });
    return app;
  };
  const gatewayRoutes = (app: Express) => {
    // Spellings of the path that Express also matches (another case, a trailing slash) reach the same handler.
    for (const [path, route] of gatewayPaths) app.post(path, (req, res) => route(req, res));
    if (options.separateInstall) {
      // A machine token must not cross the network in the clear: these are served over TLS only, with a pinned key.
      app.all(INSTALL_PATHS, (_req, _res, next) =>
        next(new MakinaError("not_found", "This relay serves its install script, agent package and machine check over TLS, on its install listener: use the install command that `makina admin machine create` or the Machines page prints (it names that address and pins its key).")),
      );
    } else {
      installRoutes(app);
    }
    app.use(openAiRouter({ directory: deps.directory, limiter: deps.limiter, bodyLimitBytes: deps.limits.bodyLimitBytes }));
  };
  const installRoutes = (app: Express) => {
    app.use(agentCheckRouter(deps.control, install.agentPackage));
    app.use(installRouter(install));
  };
  const adminRoutes = (app: Express) => {
    app.get("/metrics", metricsRoute(deps.metrics, deps.adminTokenHash, deps.metricsTokenHash));
    app.use(authRouter({ control: deps.control, sessions: deps.sessions }));
    app.use(
      adminRouter({
        control: deps.control,
        sessions: deps.sessions,
        events: deps.events,
        adminTokenHash: deps.adminTokenHash,
        eventsKeepaliveMs: deps.eventsKeepaliveMs,
      }),
    );
    app.use(webApp(deps.webDir === undefined ? findWebDir() : deps.webDir));
  };
  const finish = (app: Express) => {
    app.use(unknownUrl());
    app.use(errorHandler(deps.log, deps.storage));
    return app;
  };
  const publicApp = base(!options.separateAdmin);
  gatewayRoutes(publicApp);
  if (!options.separateAdmin) adminRoutes(publicApp);
  finish(publicApp);
  let adminApp: Express | null = null;
  if (options.separateAdmin) {
    adminApp = base(true);
    adminRoutes(adminApp);
    finish(adminApp);
  }
  let installApp: Express | null = null;
  if (options.separateInstall) {
    installApp = base(false);
    installRoutes(installApp);
    finish(installApp);
  }
  return {
    install: installApp,
    public: (req, res) => {
      const url = req.url ?? "";
      const route = req.method === "POST" ? gatewayPaths.get(url.includes("?") ? url.split("?", 1)[0]! : url) : undefined;
      if (route) route(req, res);
      else publicApp(req, res);
    },
    admin: adminApp,
  };
}

/** What the gateway's routes are built on; its requests in flight are ended together when `deps.ending` aborts. */
function gatewayDeps(deps: RelayAppDeps): GatewayDeps {
  const inFlight = new RequestsInFlight();
  deps.ending?.addEventListener("abort", () => inFlight.endAll(), { once: true });
  let turns = 0;
  return {
    turn: () => (turns = (turns + 1) % 0x40000000),
    directory: deps.directory,
    registry: deps.targets,
    log: deps.log,
    limiter: deps.limiter,
    refusals: new RefusalBudget(),
    usage: deps.usage,
    requests: deps.requests,
    metrics: deps.metrics,
    gate: deps.gate,
    inFlight,
    ...deps.limits,
  };
}

/** What `/health` says is wrong, by part: the database, the limits, the token budgets, NATS (empty: nothing). */
function healthDetails(deps: RelayAppDeps): Record<string, string> {
  const problem = deps.storage?.problem;
  const limits = deps.limiter.problem ?? null;
  const budgets = deps.budgetsPerRelay?.()
    ? "token budgets are counted by each relay on its own (relays share a database but no Redis): a budget may be spent once on each relay; give every relay --redis to make them exact"
    : null;
  const nats = !deps.fleet
    ? null
    : !deps.fleet.connected
      ? "NATS cannot be reached: requests for machines linked to other relays are refused until it is back"
      : deps.fleet.insecure
        ? "NATS is joined beyond loopback with neither credentials nor TLS (--nats-insecure): anyone who reaches it sees which machines the relays hold and can flood it (the relays' messages are sealed still)"
        : null;
  return { ...(problem ? { storage: problem } : {}), ...(limits ? { limits } : {}), ...(budgets ? { budgets } : {}), ...(nats ? { nats } : {}) };
}
