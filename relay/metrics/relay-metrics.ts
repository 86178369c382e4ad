import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { StackMetrics, UnloadReason } from "../../proto/index.js";

/** A load or an unload of an on-demand stack's model, as its machine reported it. */
export type ResidencyEvent = { kind: "load"; loaded: boolean; seconds: number } | { kind: "unload"; reason: UnloadReason };

/** What one answered gateway request adds to the metrics. */
export interface RequestOutcome {
  /** The `model` asked for; empty when the body did not name one. */
  model: string;
  status: number;
  /** The API key's id; empty when the request had no valid key. */
  keyId: string;
  /** The error code of a refused or failed request (`rate_limit_tokens`…), else null. */
  errorCode: string | null;
  durationSeconds: number;
  /** Seconds to the first token of a streamed answer, when there was one. */
  firstTokenSeconds: number | null;
}

/**
 * Keys given a `key_id` series of their own: the first this many to send a request since the relay started;
 * the requests of any other are counted under `key_id="other"`. Anyone who may make keys could otherwise grow
 * /metrics (and every scraper's storage) by a series per key.
 */
export const MAX_KEY_SERIES = 100;
/** Machines' stacks whose model loads and unloads get series of their own, at most (a tenant making and deleting stacks does not grow /metrics without bound). */
const MAX_RESIDENCY_SERIES = 1000;

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
/** A model's load: a small GGUF file in a fraction of a second, a large model on a GPU in minutes. */
const LOAD_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/**
 * The relay's Prometheus metrics, in a registry of its own (no global state):
 * gateway requests by model, status and key; latency and time-to-first-token
 * histograms; tokens in and out; rate-limit refusals; requests in flight;
 * machines online; and the process's own CPU, memory and event-loop delay.
 */
export class RelayMetrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: "makina_requests_total",
    help: `Gateway chat requests answered, by model, HTTP status and API key id (the first ${MAX_KEY_SERIES} keys to send one since the relay started; the others' under key_id="other").`,
    labelNames: ["model", "status", "key_id"],
    registers: [this.registry],
  });
  /** The machines' stacks with load series of their own. */
  private readonly residencySeries = new Set<string>();
  /** The keys with a series of their own. */
  private readonly keySeries = new Set<string>();
  private readonly duration = new Histogram({ name: "makina_request_duration_seconds", help: "Time from a chat request's arrival to its answer's end.", labelNames: ["model"], buckets: LATENCY_BUCKETS, registers: [this.registry] });
  private readonly firstToken = new Histogram({ name: "makina_time_to_first_token_seconds", help: "Time from a streamed chat request's arrival to its first token.", labelNames: ["model"], buckets: LATENCY_BUCKETS, registers: [this.registry] });
  private readonly tokens = new Counter({ name: "makina_tokens_total", help: "Tokens processed, by model and direction (prompt or completion).", labelNames: ["model", "direction"], registers: [this.registry] });
  private readonly rateLimited = new Counter({ name: "makina_rate_limited_total", help: "Requests refused by a key's limit, by kind (requests or tokens).", labelNames: ["kind"], registers: [this.registry] });
  private readonly inFlight = new Gauge({ name: "makina_requests_in_flight", help: "Gateway chat requests being answered now.", registers: [this.registry] });
  private readonly loads = new Counter({ name: "makina_model_loads_total", help: "On-demand models loaded on a request, by machine, stack and outcome (loaded, failed), as the machines reported.", labelNames: ["machine_id", "stack_id", "outcome"], registers: [this.registry] });
  private readonly loadTime = new Histogram({ name: "makina_model_load_seconds", help: "Time an on-demand model took to load (room made for it included), as its machine measured it.", labelNames: ["machine_id", "stack_id"], buckets: LOAD_BUCKETS, registers: [this.registry] });
  private readonly unloads = new Counter({ name: "makina_model_unloads_total", help: "On-demand models unloaded, by machine, stack and reason: idle (its idle time passed) or memory (evicted to make room for another).", labelNames: ["machine_id", "stack_id", "reason"], registers: [this.registry] });

  /** The runtime metrics each connected machine last reported, by machine id. */
  private readonly runtimes = new Map<string, StackMetrics[]>();

  /** `relayId`: labels every series `relay` (relays sharing a database, each scraped on its own). */
  constructor(options: {
    machinesOnline: () => number;
    relayId?: string;
    otherRelays?: () => { relay: string; via: "direct" | "nats" }[];
    /** Messages on the relays' bus dropped so far, by why (`--nats`). */
    busDropped?: () => Readonly<Record<string, number>>;
  }) {
    if (options.relayId) this.registry.setDefaultLabels({ relay: options.relayId });
    const runtimes = this.runtimes;
    /** A series per stack of every connected machine, set from what the agents last reported. */
    const fromAgents = (name: string, help: string, value: (m: StackMetrics) => number, kind: "counter" | "gauge") => {
      const Metric = kind === "counter" ? Counter : Gauge;
      const metric: Counter<string> | Gauge<string> = new Metric({
        name,
        help,
        labelNames: ["machine_id", "stack_id"],
        registers: [this.registry],
        collect() {
          metric.reset();
          for (const [machineId, stacks] of runtimes) {
            for (const m of stacks) metric.inc({ machine_id: machineId, stack_id: m.stackId }, Math.max(0, value(m)));
          }
        },
      });
    };
    fromAgents("makina_runtime_requests_total", "Requests a stack's runtime finished on its machine, as its agent reports (restarts at 0 with the agent).", (m) => m.requests, "counter");
    fromAgents("makina_runtime_failed_requests_total", "Requests a stack's runtime failed on its machine, as its agent reports.", (m) => m.failed, "counter");
    fromAgents("makina_runtime_prompt_tokens_total", "Prompt tokens a stack's runtime processed on its machine, as its agent reports.", (m) => m.promptTokens, "counter");
    fromAgents("makina_runtime_completion_tokens_total", "Tokens a stack's runtime generated on its machine, as its agent reports.", (m) => m.completionTokens, "counter");
    fromAgents("makina_runtime_requests_in_flight", "Requests a stack's runtime is serving now, as its agent last reported.", (m) => m.inFlight, "gauge");
    fromAgents("makina_runtime_requests_waiting_for_credit", "Requests held on the machine because their client reads slower than the runtime generates.", (m) => m.waitingForCredit, "gauge");
    new Gauge({
      name: "makina_machines_online",
      help: "Machines whose agent is connected now.",
      registers: [this.registry],
      collect() {
        this.set(options.machinesOnline());
      },
    });
    if (options.otherRelays) {
      const others = options.otherRelays;
      new Gauge({
        name: "makina_other_relays",
        help: "The other relays this relay reaches (1 each), and whether its requests cross to each directly or over NATS.",
        labelNames: ["other_relay", "via"],
        registers: [this.registry],
        collect() {
          this.reset();
          for (const { relay, via } of others()) this.set({ other_relay: relay, via }, 1);
        },
      });
    }
    if (options.busDropped) {
      const dropped = options.busDropped;
      new Counter({
        name: "makina_bus_messages_dropped_total",
        help: "Messages on the relays' NATS bus dropped, by why: unauthenticated (not sealed with the relays' key), misaddressed, stale, replayed, impersonating (a relay speaking for another).",
        labelNames: ["reason"],
        registers: [this.registry],
        collect() {
          this.reset();
          for (const [reason, n] of Object.entries(dropped())) this.inc({ reason }, n);
        },
      });
    }
    // The event loop's delay is sampled every 100 ms, not prom-client's default 10: a timer that wakes the process
    // 100 times a second costs an idle relay about 1% of a core on a small VM, for lag nobody reads at that grain.
    collectDefaultMetrics({ register: this.registry, prefix: "makina_relay_", eventLoopMonitoringPrecision: 100 });
  }

  /** A chat request arrived; returns the function that records its outcome (call it once). */
  started(): (outcome: RequestOutcome) => void {
    this.inFlight.inc();
    let done = false;
    return (o) => {
      if (done) return;
      done = true;
      this.inFlight.dec();
      const model = o.model.slice(0, 256);
      this.requests.inc({ model, status: String(o.status), key_id: this.keyLabel(o.keyId) });
      this.duration.observe({ model }, o.durationSeconds);
      if (o.firstTokenSeconds !== null) this.firstToken.observe({ model }, o.firstTokenSeconds);
      if (o.errorCode === "rate_limit_requests") this.rateLimited.inc({ kind: "requests" });
      if (o.errorCode === "rate_limit_tokens") this.rateLimited.inc({ kind: "tokens" });
    };
  }

  /** A key's `key_id` label: its id while there is room for its series, else `other` (no key: empty). */
  private keyLabel(keyId: string): string {
    if (keyId === "" || this.keySeries.has(keyId)) return keyId;
    if (this.keySeries.size >= MAX_KEY_SERIES) return "other";
    this.keySeries.add(keyId);
    return keyId;
  }

  /** What a machine's agent reported of its stacks' runtimes (at most the stacks it was given). */
  runtimeReported(machineId: string, stacks: StackMetrics[]): void {
    this.runtimes.set(machineId, stacks);
  }

  /** An on-demand stack's model loaded (or failed to), or unloaded, on a machine linked here. */
  residency(machineId: string, stackId: string, event: ResidencyEvent): void {
    // A series per machine and stack, for the first stacks that load since the relay started; the others' under "other".
    const key = `${machineId}/${stackId}`;
    if (!this.residencySeries.has(key) && this.residencySeries.size < MAX_RESIDENCY_SERIES) this.residencySeries.add(key);
    const labels = this.residencySeries.has(key) ? { machine_id: machineId, stack_id: stackId } : { machine_id: "other", stack_id: "other" };
    if (event.kind === "unload") return void this.unloads.inc({ ...labels, reason: event.reason });
    this.loads.inc({ ...labels, outcome: event.loaded ? "loaded" : "failed" });
    if (event.loaded) this.loadTime.observe(labels, event.seconds);
  }

  /** A machine went offline: its runtimes' series go. */
  machineGone(machineId: string): void {
    this.runtimes.delete(machineId);
  }

  /** Tokens a request used, once known. */
  usage(model: string, promptTokens: number, completionTokens: number): void {
    this.tokens.inc({ model: model.slice(0, 256), direction: "prompt" }, Math.max(0, promptTokens));
    this.tokens.inc({ model: model.slice(0, 256), direction: "completion" }, Math.max(0, completionTokens));
  }

  /** The text exposition format. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
