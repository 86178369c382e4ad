import { readFileSync } from "node:fs";
import { HubClient } from "../hub/index.js";
import type { RelayConfig } from "../relay-config.js";
import { settingOf } from "../config.js";
import { WebSessions } from "../auth/index.js";
import { ControlPlane, ModelFiles, ModelInspector, readGgufHeaderWith } from "../control/index.js";
import { RequestLog, UsageRecorder } from "../usage/index.js";
import { Deployer } from "../deploy/index.js";
import type { MachineReach } from "../machines/index.js";
import { BudgetBook, RateLimiter, RedisRateLimiter, type BudgetSeed, type Limiter } from "../limits/index.js";
import type { Store } from "../store/index.js";
import { AuditLog } from "../audit/index.js";
import type { Shared } from "./relay-parts.js";
import type { ChangeFeed } from "../cluster/index.js";
import type { GatewayDirectory } from "../routing/index.js";
import type { AlertDeps } from "../control/alerts.js";
import type { SsoDeps } from "../control/index.js";


/**
 * The books the gateway and the control plane write: the rate limiter (in memory, or Redis), the usage counts,
 * the request log and the audit log, each a part that writes what it holds when it stops.
 */
export async function startBooks(s: Shared, store: Store) {
  const { config, log, parts, storage } = s;
  // Counts the database still refuses are lost with the process: said so in the log, the stop goes on.
  const usage = await parts.start({
    name: "the usage counts",
    start: () => new UsageRecorder(store.db, { onWriteError: (err) => storage.failed("usage counts", err) }),
    stop: (u) => storage.attempt("usage counts", () => u.close()).then(() => undefined),
  });
  // A token budget's count in a period starts from what the usage counts say was used in it.
  const seed: BudgetSeed = (line, since) => usage.tokensSince(line.orgId, line.scope === "key" ? line.id : null, since);
  const limiter = await parts.start<Limiter>({
    name: "the rate limiter",
    setting: settingOf("redis"),
    start: async () => {
      if (!config.redis) return new RateLimiter(Date.now, 60_000, new BudgetBook(seed));
      const redis = await RedisRateLimiter.connect(config.redis, log.child({ component: "limits" }), { fail: config.redisFail, seed });
      // Limits shared by every relay from the first request on; a Redis that does not answer yet is not a reason
      // to stay down: this relay applies limits on its own meanwhile (or refuses keys with limits, with
      // --redis-fail closed), logged and in /health.
      await redis.ready(5000).catch((err: unknown) => log.warn("starting with rate limits per relay: Redis does not answer yet", { error: String(err) }));
      return redis;
    },
    stop: (l) => l.close?.(),
  });
  const requests = await parts.start({
    name: "the request log",
    start: () =>
      new RequestLog(store, {
        retentionMs: config.requestLogDays * 86_400_000,
        keepPerOrg: config.requestLogRows,
        onWriteError: (what, err) => storage.failed(what, err),
        onDropped: (count) => log.warn("requests went unlogged: more came than the database took in time", { count }),
      }),
    stop: (r) => storage.attempt("the request log", () => r.close()).then(() => undefined),
  });
  const audit = await parts.start({
    name: "the audit log",
    start: () => new AuditLog(store, log.child({ component: "audit" }), { retentionMs: config.auditRetentionDays * 86_400_000, onWriteError: (what, err) => storage.failed(what, err) }),
    stop: (a) => a.close(),
  });
  return { limiter, usage, requests, audit };
}

/** The control plane, on what the relay has started. */
export function controlPlane(
  s: Shared,
  d: { store: Store; directory: GatewayDirectory; deployer: Deployer; feed: ChangeFeed | undefined; machines: MachineReach; linkCaSha256: string | null; tlsOn: boolean; audit: AuditLog; sessions: WebSessions; usage: UsageRecorder; requests: RequestLog; limiter: Limiter; alerts?: AlertDeps; sso?: SsoDeps },
): ControlPlane {
  const { config, registry, events, here } = s;
  const { store, directory, deployer, feed, machines, linkCaSha256, tlsOn, audit, sessions, usage, requests, limiter, alerts, sso } = d;
  const hubToken = readHubToken(config);
  return new ControlPlane({
    store,
    deployer,
    link: () => ({ address: here.linkAddress, tls: tlsOn, caSha256: linkCaSha256, relayUrl: here.relayUrl, install: here.install, reach: here.reach, otherAddresses: feed ? () => feed.linkAddresses() : undefined }),
    events,
    inspector: new ModelInspector({ hubEndpoint: config.hfEndpoint, readHeader: hubToken ? readGgufHeaderWith(hubToken) : undefined }),
    dropLink: (machineId) => registry.get(machineId)?.end(),
    // A model file named by a local path is looked for on its machine, wherever it is linked.
    files: new ModelFiles((machineId, check, signal) => machines.at(machineId).checkModel(check, signal)),
    audit,
    sessions,
    usage,
    requests,
    findOrg: (ref) => directory.findOrg(ref),
    loadsOf: (ids) => machines.loads(ids),
    // The machine waits its own load timeout for room, then says why: the relay waits longer, to hear it.
    loadModel: (machineId, stackId, load) => machines.at(machineId).loadModel(stackId, load, 2 * config.loadTimeoutMs + 10_000),
    readLog: (machineId, stackId, after, limit) => machines.at(machineId).readLog(stackId, after, limit),
    caps: { stacksPerOrg: config.maxStacksPerOrg, keysPerPerson: config.maxKeysPerPerson },
    budgetSpent: (line) => limiter.spent(line),
    alerts,
    sso,
    hub: new HubClient({ endpoint: config.hfEndpoint, token: () => hubToken }),
  });
}

/** The hub token: `HF_TOKEN`, else the file `MAKINA_HF_TOKEN_FILE` names (read once, at start), else none. */
function readHubToken(config: RelayConfig): string | undefined {
  if (config.hfToken) return config.hfToken;
  if (!config.hfTokenFile) return undefined;
  try {
    return readFileSync(config.hfTokenFile, "utf8").trim() || undefined;
  } catch (err) {
    throw new Error(`The hub token file (MAKINA_HF_TOKEN_FILE) cannot be read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}
