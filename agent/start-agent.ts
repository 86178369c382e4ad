import { bookedLogger, createLogger, LogBook, Parts, PROTOCOL_VERSION, type Part, type HardwareReport, type Inventory, type LinkDialer, type Logger, type PartState } from "../proto/index.js";
import { mkdir, statfs } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { agentSettingOf, type AgentConfig } from "./config.js";
import { InventoryReporter, modelsOnDisk, startControlServer, type AgentStatus } from "./control/index.js";
import { detectHardware, hardwareChanged, type HardwareSource } from "./hardware/detect-hardware.js";
import { Backoff } from "./flow/index.js";
import { InferenceDispatcher } from "./link/inference-dispatcher.js";
import type { ImageFetchOptions } from "./link/inline-images.js";
import { GrpcDialer } from "./link/grpc-dialer.js";
import { FailoverDialer, type ResolveHost } from "./link/failover-dialer.js";
import { LinkClient } from "./link/link-client.js";
import { RelayMessageHandler } from "./link/relay-message-handler.js";
import { ModelStore } from "./models/model-store.js";
import { ggufAdapter } from "./runtimes/adapters/gguf-adapter.js";
import { mlxAdapter } from "./runtimes/adapters/mlx-adapter.js";
import { openaiServerAdapter } from "./runtimes/adapters/openai-adapter.js";
import { vllmAdapter } from "./runtimes/adapters/vllm-adapter.js";
import type { RuntimeAdapter, RuntimeKind } from "./runtimes/runtime-adapter.js";
import { budgetBytes } from "./stacks/memory-budget.js";
import { ResidencyBook } from "./stacks/residency-book.js";
import { StackHost } from "./stacks/stack-host.js";
import { LoadSampler, type LoadSource } from "./hardware/machine-load.js";
import { agentVersion, dependencyVersion } from "./version.js";

/** A running agent. */
export interface Agent {
  readonly config: AgentConfig;
  readonly link: LinkClient;
  readonly host: StackHost;
  readonly inference: InferenceDispatcher;
  /** The hardware as last detected. */
  readonly hardware: HardwareReport;
  /** What the control socket reports. */
  status(): Promise<AgentStatus>;
  /** The agent's parts in the order they started, each with its state (all `stopped` once `stop` resolved). */
  parts(): { name: string; state: PartState }[];
  /**
   * Tells the relay its stacks take no new requests, lets the requests in flight finish (up to
   * `drainTimeoutMs`), then stops every part in the reverse of the order it started: the load reports, the
   * link, the control socket, what is left in flight, the models. Idempotent.
   */
  stop(): Promise<void>;
}

/** Options of {@link startAgent}. */
export interface StartAgentOptions {
  log?: Logger;
  hardwareSource?: HardwareSource;
  /** Where the machine's load is read (tests give stand-ins). @default the real machine */
  loadSource?: LoadSource;
  /** How to reach the relay; absent to dial `config.server` over gRPC. `makina up` passes its relay's in-process dialer. */
  dial?: LinkDialer;
  /** Adapters that replace the built-in ones of their kind (tests use a stand-in model this way). */
  adapters?: Partial<Record<RuntimeKind, RuntimeAdapter>>;
  /** How the relays' names are resolved to their addresses. @default the system's resolver */
  resolveHost?: ResolveHost;
  /** How images named by URL are fetched (tests: a resolver, an address rule, a CA). @default public https hosts */
  imageFetch?: Omit<ImageFetchOptions, "allowedDomains">;
}

/**
 * Composition root of the agent: an ordered list of parts (the hardware, the runtimes, the inference
 * dispatcher, the relays' addresses, the control socket, the link, the hardware watch, the load reports). A
 * part that fails to start stops those before it, in reverse, and the start rejects with a `PartStartError`
 * naming the part and the setting that changes it: nothing is left open.
 */
export async function startAgent(config: AgentConfig, options: StartAgentOptions = {}): Promise<Agent> {
  // What it logs is also kept (its last lines, and each stack's), for an admin to read over the link.
  const logs = new LogBook();
  const log = bookedLogger((options.log ?? createLogger({ level: config.logLevel, format: config.logFormat })).child({ component: "agent", machineId: config.machineId }), logs, { component: "agent" });
  const parts = new Parts("agent", log);
  try {
    return await startParts(config, options, log, parts, logs);
  } catch (err) {
    // A failed part has stopped the others already; a step between parts has not.
    await parts.stop();
    throw err;
  }
}

/** Starts the agent's parts in order; see {@link startAgent}. */
async function startParts(config: AgentConfig, options: StartAgentOptions, log: Logger, parts: Parts, logs: LogBook): Promise<Agent> {
  const startedAt = Date.now();
  const detected = await parts.start({ name: "the hardware", start: () => detectHardware({ log, source: options.hardwareSource }) });
  // The hardware as last detected, and what could not be read of it (detected again by the hardware watch).
  const machine = { hardware: detected.report, problems: detected.problems };
  await parts.start({ name: "the data directory", setting: agentSettingOf("dataDir"), start: () => mkdir(config.dataDir, { recursive: true, mode: 0o700 }) });
  const models = new ModelStore(config.dataDir, log.child({ component: "models" }), { hub: { endpoint: config.hfEndpoint, token: config.hfToken } });
  // `link` and `inventory` are made below; these closures only run once they exist.
  const send = (m: Parameters<LinkClient["send"]>[0]) => link.send(m);
  const host = await parts.start({
    name: "the runtimes",
    start: () =>
      stackHost(config, options, models, () => machine.hardware, (stackId, state, error, detail) => {
        send({ type: "runtimeState", stackId, state, error: error ?? "", ...detail });
        void inventory.report();
      }, log, logs),
    // The models unloaded, their processes ended.
    stop: (h) => h.close(),
  });
  const inference = await parts.start({
    name: "the inference dispatcher",
    start: () => new InferenceDispatcher(host, send, log.child({ component: "inference" }), { ...options.imageFetch, allowedDomains: [...config.allowedMediaDomains] }),
    stop: (i) => i.abortAll("the agent is stopping"),
  });
  const relayMessages = new RelayMessageHandler({ inference, host, send, onStepDone: () => void inventory.report(), log });
  // One dialer per relay address (each `--server`, or each address of a name); with several, each new link
  // goes to the next (one CA pinned for all of them). The first link already spread over every address of the
  // relays' names (not left to wait on a resolver that does not answer: then the name itself is dialed).
  const grpc = options.dial
    ? undefined
    : await parts.start({
        name: "the relays' addresses",
        setting: agentSettingOf("server"),
        start: async () => {
          const dialer = relaysDialer(config, options);
          await dialer.refresh(3000);
          return dialer;
        },
        stop: (d) => d.close(),
      });
  // The machine's load goes to the relay every few seconds while the link is up.
  const loads = loadReports(options.loadSource, () => link, log);
  const link: LinkClient = new LinkClient({
    dial: options.dial ?? grpc!.dial,
    hello: () => ({ type: "hello", protocolVersion: PROTOCOL_VERSION, agentVersion: agentVersion(), hardware: machine.hardware }),
    withHeartbeat: () => {
      const stacks = inference.metrics();
      return stacks.length ? { type: "metrics", stacks } : undefined;
    },
    // Thousands of machines losing one relay at once come back spread over two seconds, not all at once.
    backoff: new Backoff({ minMs: config.reconnectMinMs, maxMs: config.reconnectMaxMs, firstSpreadMs: Math.min(2000, config.reconnectMaxMs) }),
    // With several relays, one that does not welcome the link soon is left for the next (read at every dial:
    // a name's addresses may come and go).
    get welcomeTimeoutMs() {
      return (grpc?.addresses ?? 1) > 1 ? 5000 : 15_000;
    },
    log: log.child({ component: "link" }),
    onOnline: () => {
      inventory.linkOnline();
      loads.send();
    },
    onDisconnect: () => relayMessages.linkLost("the link to the relay was lost"),
    onMessage: (message) => relayMessages.handle(message),
  });
  const inventory = new InventoryReporter(() => inventoryOf(host, models), (inventory) => link.send({ type: "inventory", inventory }), log);
  const status = () => agentStatus({ config, startedAt, link, grpc, host, models, machine });
  await parts.start({ name: `the control socket (${config.controlSocket})`, setting: agentSettingOf("controlSocket"), start: () => startControlServer(config.controlSocket, status, log.child({ component: "control" })), stop: (c) => c.close() });
  await parts.start({ name: "the link", start: () => link.start(), stop: () => link.stop() });

  await parts.start(hardwareWatch(config, options, machine, link, log));

  await parts.start({
    name: "the load reports",
    start: () => setInterval(loads.send, config.loadIntervalMs).unref(),
    stop: (timer) => {
      clearInterval(timer);
      loads.stop();
    },
  });

  let stopping: Promise<void> | undefined;
  return {
    config,
    link,
    host,
    inference,
    get hardware() {
      return machine.hardware;
    },
    status,
    parts: () => parts.list(),
    stop() {
      stopping ??= (async () => {
        if (link.state === "online" && inference.inFlight > 0) {
          // New requests get 503 with Retry-After from the relay while these finish.
          for (const h of host.list()) link.send({ type: "runtimeState", stackId: h.stackId, state: "loading", error: "the agent is stopping" });
          log.info("agent stopping: draining requests in flight", { inFlight: inference.inFlight, graceMs: config.drainTimeoutMs });
          const deadline = Date.now() + config.drainTimeoutMs;
          while (inference.inFlight > 0 && Date.now() < deadline) await sleep(50);
        }
        await parts.stop();
        log.info("agent stopped");
      })();
      return stopping;
    },
  };
}

/** Where the stacks' runtimes live: one adapter per kind (the options' stand-ins replacing built-in ones). */
function stackHost(config: AgentConfig, options: StartAgentOptions, models: ModelStore, hardware: () => HardwareReport, onRuntimeState: ConstructorParameters<typeof StackHost>[0]["onRuntimeState"], log: Logger, logs: LogBook): StackHost {
  return new StackHost({
    runtimeSetup: {
      runtimesDir: join(config.dataDir, "runtimes"),
      runDir: join(config.dataDir, "run"),
      python: config.python,
      env: config.runtimeEnv,
      packages: { vllm: config.vllmPackage, mlx: config.mlxPackage },
      hub: { endpoint: config.hfEndpoint, token: config.hfToken },
      health: { healthIntervalMs: config.healthIntervalMs, healthTimeoutMs: config.healthTimeoutMs },
      allowedMediaDomains: config.allowedMediaDomains,
    },
    models,
    adapters: {
      gguf: ggufAdapter({ maxContextSize: config.maxContextSize, sequences: config.parallelSequences, threads: config.threads, gpu: config.gpu, streamIntervalMs: config.streamIntervalMs }),
      vllm: vllmAdapter,
      mlx: mlxAdapter,
      openai: openaiServerAdapter,
      ...options.adapters,
    },
    hardware,
    onRuntimeState,
    book: new ResidencyBook({ maxLoaded: config.maxLoaded, budgetBytes: budgetBytes(config.memoryBudget, hardware()) }),
    loadTimeoutMs: config.loadTimeoutMs,
    ggufContext: { contextSize: config.maxContextSize, sequences: config.parallelSequences },
    log: log.child({ component: "stacks" }),
    logs,
  });
}

/**
 * One dialer per relay address (each `--server`, or each address of a name); with several, each new link goes to
 * the next (one CA pinned for all of them).
 */
function relaysDialer(config: AgentConfig, options: StartAgentOptions): FailoverDialer {
  return new FailoverDialer({
    servers: config.servers,
    dialer: (address, server) =>
      new GrpcDialer(
        address,
        { machineId: config.machineId, token: config.token },
        { caSha256: config.caSha256, caCacheFile: join(config.dataDir, "relay-ca.pem"), caFile: config.caFile, tls: config.tls },
        server,
      ),
    resolve: options.resolveHost,
  });
}

/**
 * The machine's load, sent to the relay while the link is up: one sample at a time (a GPU tool slower than the
 * interval is not asked twice at once); `stop` ends the sample under way.
 */
function loadReports(source: LoadSource | undefined, link: () => LinkClient, log: Logger): { send: () => void; stop: () => void } {
  const sampler = new LoadSampler(source);
  const abort = new AbortController();
  let sampling = false;
  return {
    send: () => {
      if (sampling || link().state !== "online" || abort.signal.aborted) return;
      sampling = true;
      void sampler
        .sample(abort.signal)
        .then((sample) => link().state === "online" && link().send({ type: "load", load: sample }))
        .catch((err: unknown) => log.debug("load sample failed", { error: String(err) }))
        .finally(() => (sampling = false));
    },
    stop: () => abort.abort(),
  };
}

/** What the machine hosts, for the relay: each stack's runtime (loaded or not, and what it counts), the models on disk, the budget. */
async function inventoryOf(host: StackHost, models: ModelStore): Promise<Inventory> {
  const runtimes = host.list();
  const { loadedStacks, ...memory } = host.memoryCounts();
  return {
    runtimes: runtimes.map((r) => ({
      stackId: r.stackId,
      modelId: r.modelId,
      runtime: r.runtime,
      version: runtimeVersion(r.runtime),
      state: r.state,
      endpoint: r.endpoint,
      error: r.error ?? "",
      residency: r.residency,
      memoryBytes: r.memoryBytes,
      loaded: loadedStacks.includes(r.stackId),
    })),
    models: modelsOnDisk(await models.list(), runtimes).map(({ source: _source, ...m }) => m),
    memory,
  };
}

/** What the agent's runtime of a kind is, for its inventory and status. */
function runtimeVersion(kind: string): string {
  return kind === "gguf" ? `node-llama-cpp ${dependencyVersion("node-llama-cpp")}` : kind === "openai" ? "external" : "see the runtime's venv";
}

/** What the control socket reports (`makina info`, `makina doctor`). */
async function agentStatus(a: {
  config: AgentConfig;
  startedAt: number;
  link: LinkClient;
  grpc: FailoverDialer | undefined;
  host: StackHost;
  models: ModelStore;
  machine: { hardware: HardwareReport; problems: string[] };
}): Promise<AgentStatus> {
  const { config, link, grpc } = a;
  const { hardware, problems } = a.machine;
  const disk = await statfs(config.dataDir).catch(() => undefined);
  return {
    agentVersion: agentVersion(),
    pid: process.pid,
    startedAt: a.startedAt,
    machineId: config.machineId,
    server: grpc && grpc.addresses > 1 ? `${grpc.current} (of ${config.server})` : config.server,
    dataDir: config.dataDir,
    link: { state: link.state, lastError: link.lastError, credentialsRejected: link.credentialsRejected, onlineSince: link.onlineSince },
    hardware,
    hardwareProblems: problems,
    accelerators: hardware.accelerators,
    disk: disk ? { path: config.dataDir, freeBytes: disk.bavail * disk.bsize, sizeBytes: disk.blocks * disk.bsize } : null,
    runtimes: a.host.list().map((r) => ({ ...r, version: runtimeVersion(r.runtime) })),
    memory: a.host.memoryCounts(),
    models: await a.models.list(),
  };
}

/** Hardware detected again now and then (`hardwareIntervalMs`): `machine` follows it, and the relay hears of changes. */
function hardwareWatch(config: AgentConfig, options: StartAgentOptions, machine: { hardware: HardwareReport; problems: string[] }, link: LinkClient, log: Logger): Part<NodeJS.Timeout> {
  return {
    name: "the hardware watch",
    start: () =>
      setInterval(() => {
        void detectHardware({ log, source: options.hardwareSource }).then((next) => {
          machine.problems = next.problems;
          if (!hardwareChanged(machine.hardware, next.report)) return;
          machine.hardware = next.report;
          log.info("hardware changed");
          link.send({ type: "hardware", hardware: machine.hardware });
        });
      }, config.hardwareIntervalMs).unref(),
    stop: (timer) => clearInterval(timer),
  };
}
