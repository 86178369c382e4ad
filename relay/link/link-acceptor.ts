import {
  PROTOCOL_VERSION,
  type AgentToRelay,
  type HardwareReport,
  type Inventory,
  type LinkAcceptor,
  type LinkEnd,
  type Logger,
  type StackMetrics,
  WarningThrottle,
} from "../../proto/index.js";
import type { EventBus } from "../events/index.js";
import type { ResidencyEvent } from "../metrics/index.js";
import type { StorageHealth } from "../health/index.js";
import type { HardwareSummary, Machine, MachineInventory, Store } from "../store/index.js";
import type { AgentRegistry } from "./agent-registry.js";
import { AgentSession } from "./agent-session.js";
import type { MachineLoads } from "./machine-loads.js";
import { RuntimeStateBatch } from "./runtime-state-batch.js";
import { checkMachineCredentials } from "./machine-credentials.js";

/** What {@link linkAcceptor} needs. */
export interface LinkAcceptorDeps {
  store: Store;
  registry: AgentRegistry;
  log: Logger;
  /** Heartbeat interval asked of agents, in ms; a link silent for 3.5 intervals is dropped. */
  heartbeatIntervalMs: number;
  /** A request whose runtime produces nothing for this long after its first token fails with `stream_incomplete`. */
  streamIdleTimeoutMs: number;
  /** Where machine changes (online, offline, hardware) and runtime states are announced. */
  events: EventBus;
  /** Where the runtime metrics agents report go (the relay's Prometheus metrics). */
  /** A runtime reported failed (an alert, where a webhook wants it). */
  runtimeFailed?: (orgId: string, machine: { id: string; name: string }, stackId: string, error: string | null) => void;
  runtimeMetrics: { reported(machineId: string, stacks: StackMetrics[]): void; machineGone(machineId: string): void; residency(machineId: string, stackId: string, event: ResidencyEvent): void };
  /** Where the machines' loads go (the overview reads them). */
  loads: MachineLoads;
  /** Writes of machine and runtime states that the database refuses are reported there; the link goes on. */
  storage: StorageHealth;
}

const HELLO_TIMEOUT_MS = 10_000;
/** An agent's hardware is taken at most this often; reports in between are dropped (hardware changes rarely). */
const HARDWARE_MIN_INTERVAL_MS = 10_000;
/** An agent's inventory is stored at most this often; the latest report in between is stored when the time comes. */
const INVENTORY_MIN_INTERVAL_MS = 1_000;

/** What an end that has nothing to do accepts: everything, and ignores it. */
const NOTHING: LinkEnd<AgentToRelay> = { send: () => {}, close: () => {} };

/**
 * The relay's side of every link, whatever carries it (gRPC from other machines, a direct call from an
 * agent in the same process): checks the machine's credentials and its hello, registers its session,
 * keeps the machine's state in the store, and drops a link that falls silent.
 */
export function linkAcceptor(deps: LinkAcceptorDeps): LinkAcceptor {
  const { store, log } = deps;
  // What a stranger or an agent can cause as often as it likes is said once a minute at most, per cause (and per
  // machine, for a machine whose credentials held: one machine's flood does not hide another's).
  const warnings = new WarningThrottle();
  return ({ machineId, token }, agent) => {
    // The credentials are checked in the database; what the agent sends meanwhile (its hello) waits its turn.
    let accepted: LinkEnd<AgentToRelay> | undefined;
    let waiting: AgentToRelay[] = [];
    let closed = false;
    const checking = (async () => {
      const checked = await checkMachineCredentials(store, machineId, token);
      if ("refusal" in checked) return checked;
      // The stacks given to the machine so far: its reports about any other stack are ignored.
      const owned = new Set((await store.stacks.listByMachine(checked.machine.id)).map((st) => st.id));
      return { machine: checked.machine, owned };
    })();
    checking.then(
      (checked) => {
        if (closed) return;
        if ("refusal" in checked) {
          const why = checked.revoked ? "link refused: the machine is revoked" : "link refused: bad machine credentials";
          warnings.warn(why, log, why, { machineId: machineId.slice(0, 64) });
          agent.close(checked.refusal, "credentials");
          accepted = NOTHING;
          return;
        }
        const stillValid = async () => !("refusal" in (await checkMachineCredentials(store, machineId, token)));
        accepted = acceptMachine(deps, warnings, checked.machine, checked.owned, agent, stillValid);
        for (const message of waiting) accepted.send(message);
        waiting = [];
      },
      (err: unknown) => {
        if (closed) return;
        log.error("link refused: the machine's credentials could not be checked", { machineId, error: String(err) });
        agent.close("The relay cannot check this machine's credentials right now; the agent will try again.");
        accepted = NOTHING;
      },
    );
    return {
      send(message) {
        if (accepted) return accepted.send(message);
        // An agent sends its hello and little else before it is welcomed; one that floods is cut off.
        if (waiting.length >= MAX_WAITING) {
          closed = true;
          agent.close("Too many messages before the link was accepted.", "protocol");
          return;
        }
        waiting.push(message);
      },
      close() {
        closed = true;
        waiting = [];
        accepted?.close("the link closed");
      },
    };
  };
}

/** Most messages an agent may send while its credentials are being checked. */
const MAX_WAITING = 64;

/** The relay's end of a link whose credentials were accepted. */
function acceptMachine(
  deps: LinkAcceptorDeps,
  warnings: WarningThrottle,
  machine: Machine,
  owned: Set<string>,
  agent: Parameters<LinkAcceptor>[1],
  /** Whether the machine's credentials still hold (not revoked, the same token). */
  stillValid: () => Promise<boolean>,
): LinkEnd<AgentToRelay> {
  const { store, registry, log } = deps;
  const linkLog = log.child({ machineId: machine.id });
  const machineChanged = () => deps.events.emit({ type: "machine", orgId: machine.orgId, machineId: machine.id });
  let session: AgentSession | undefined;
  let watchdog: NodeJS.Timeout | undefined;
  let hardwareAt = 0;
  const inventories = latestEvery<Inventory>(INVENTORY_MIN_INTERVAL_MS, (latest) => {
    const inventory = boundedInventory(latest);
    void deps.storage.attempt("machine inventory", () => store.machines.setInventory(machine.id, inventory)).then(machineChanged);
  });
  const runtimeStates = new RuntimeStateBatch((stackId, state, error, contextSize) => {
    linkLog.info("runtime state", { stackId, state, error, ...(contextSize !== undefined && { contextSize }) });
    if (state === "failed") deps.runtimeFailed?.(machine.orgId, machine, stackId, error);
    // The stack stays deployed: its requests get 503 runtime_unavailable until the runtime is ready again or redeployed.
    void deps.storage.attempt("runtime state", () => store.stacks.setRuntimeState(stackId, state, error, contextSize)).then(() => deps.events.emit({ type: "stack", orgId: machine.orgId, stackId }));
  });
  let metricsAt = 0;
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    clearTimeout(helloTimer);
    clearInterval(watchdog);
    inventories.stop();
    runtimeStates.close();
    if (!session) return;
    session.close();
    if (registry.remove(session)) {
      deps.runtimeMetrics.machineGone(machine.id);
      deps.loads.gone(machine.id);
      void deps.storage.attempt("machine state", () => store.machines.markOffline(machine.id)).then(machineChanged);
    }
  };
  const refuse = (reason: string) => {
    finish();
    agent.close(reason, "protocol");
  };
  const helloTimer = setTimeout(() => refuse("No hello received."), HELLO_TIMEOUT_MS);

  const open = (hello: Extract<AgentToRelay, { type: "hello" }>): AgentSession => {
    const s = new AgentSession(machine.id, machine.orgId, agent, linkLog, {
      onHardware: (hardware) => {
        const now = Date.now();
        if (now - hardwareAt < HARDWARE_MIN_INTERVAL_MS) {
          warnings.warn(`hardware too often ${machine.id}`, linkLog, "hardware report dropped: the last one was less than 10 s ago");
          return;
        }
        hardwareAt = now;
        void deps.storage.attempt("machine hardware", () => store.machines.updateHardware(machine.id, toHardwareSummary(hardware))).then(machineChanged);
        linkLog.info("hardware changed");
      },
      onInventory: (inventory) => inventories.push(inventory),
      ownsStack: (stackId) => owned.has(stackId),
      onForeignStack: (stackId) => warnings.warn(`foreign stack ${machine.id}`, linkLog, "runtime state for a stack this machine was not given, ignored", { stackId: stackId.slice(0, 64) }),
      credentialsHold: stillValid,
      // The relay wrote a runtime state itself (a deployment's end): what the agent said before it is not stored after it.
      forgetRuntimeState: (stackId) => runtimeStates.forget(stackId),
      onMetrics: (stacks) => {
        // Totals since the agent started: one report a second is all a scrape can use; the others are dropped.
        const now = Date.now();
        if (now - metricsAt < METRICS_MIN_INTERVAL_MS) return;
        metricsAt = now;
        // Only the stacks this relay gave the machine count, and no more of them than it could have.
        deps.runtimeMetrics.reported(machine.id, stacks.filter((st) => s.owns(st.stackId)));
      },
      onLoad: (load) => deps.loads.reported(machine.id, load),
      onRuntimeState: (stackId, state, error, contextSize) => runtimeStates.received(stackId, state, error, contextSize),
      onResidency: (stackId, event) => deps.runtimeMetrics.residency(machine.id, stackId, event),
    });
    watchdog = watchSilence(s, deps, (silentMs) => {
      linkLog.warn("link silent, dropping it", { silentMs });
      finish();
      agent.close("the agent was silent for too long");
    });
    const agentVersion = hello.agentVersion.slice(0, AGENT_VERSION_CHARS);
    void deps.storage.attempt("machine state", () => store.machines.markOnline(machine.id, { hardware: toHardwareSummary(hello.hardware), agentVersion })).then(machineChanged);
    s.send({ type: "welcome", machineId: machine.id, heartbeatIntervalMs: deps.heartbeatIntervalMs, protocolVersion: PROTOCOL_VERSION });
    linkLog.info("machine online", { agentVersion });
    registry.add(s);
    // A revoke or a new token that landed while the credentials were checked found no link to drop: check again
    // now that the link is registered, where any later one finds it. (A failed check keeps the link: the first passed.)
    stillValid().then(
      (valid) => {
        if (valid || finished) return;
        linkLog.warn("link dropped: the machine was revoked or given a new token while it linked");
        finish();
        agent.close("This machine was revoked or given a new token; run its new install command.", "credentials");
      },
      () => undefined,
    );
    return s;
  };

  return {
    send(message) {
      if (finished) return;
      if (session) return session.handle(message);
      clearTimeout(helloTimer);
      if (message.type !== "hello") return refuse("The first message on the link must be a hello.");
      if (message.protocolVersion !== PROTOCOL_VERSION) {
        return refuse(`Protocol version ${message.protocolVersion} is not supported; this relay speaks ${PROTOCOL_VERSION}.`);
      }
      session = open(message);
    },
    close: finish,
  };
}

/** Takes values as they come and hands on at most one every `intervalMs`: the latest, once its time comes. */
function latestEvery<T>(intervalMs: number, take: (value: T) => void): { push(value: T): void; stop(): void } {
  let at = 0;
  let timer: NodeJS.Timeout | undefined;
  let latest: T | undefined;
  let stopped = false;
  const due = () => {
    timer = undefined;
    if (latest === undefined || stopped) return;
    at = Date.now();
    const value = latest;
    latest = undefined;
    take(value);
  };
  return {
    push(value) {
      latest = value;
      if (timer) return;
      const wait = at + intervalMs - Date.now();
      if (wait <= 0) due();
      else timer = setTimeout(due, wait);
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/**
 * One timer per link checks how long the agent has been silent (every message counts), rather than a timer
 * re-armed for every message, which cost the relay a timer per streamed chunk; it also fails the link's requests
 * whose runtime went quiet. `silent` is told once the agent said nothing for 3.5 heartbeats.
 */
function watchSilence(s: AgentSession, deps: Pick<LinkAcceptorDeps, "heartbeatIntervalMs" | "streamIdleTimeoutMs">, silent: (silentMs: number) => void): NodeJS.Timeout {
  const silenceMs = deps.heartbeatIntervalMs * 3.5;
  const tickMs = Math.max(50, Math.floor(deps.heartbeatIntervalMs / 2));
  let lastTick = Date.now();
  let graceUntil = 0;
  return setInterval(() => {
    const now = Date.now();
    const stalled = now - lastTick - tickMs > deps.heartbeatIntervalMs;
    lastTick = now;
    // A tick that comes late means this process was stalled, not that the agent was silent:
    // give the agent's queued messages a full silence period to arrive before judging it.
    if (stalled) graceUntil = now + silenceMs;
    if (now < graceUntil) return;
    s.failStalled(deps.streamIdleTimeoutMs, now);
    if (now - s.lastSeenAt > silenceMs) silent(now - s.lastSeenAt);
  }, tickMs);
}

/** Runtime metrics are taken at most this often per link (about once a second, with room for a heartbeat a second). */
const METRICS_MIN_INTERVAL_MS = 900;
/** Longest agent version kept (stored, shown, logged). */
const AGENT_VERSION_CHARS = 64;

/** Longest string kept from an agent's inventory, and most entries: a machine cannot grow the database without bound. */
const INVENTORY_STRING = 1024;
const INVENTORY_ENTRIES = 256;

/** An agent's inventory as stored: strings and lists cut to size. */
function boundedInventory(inv: Inventory): MachineInventory {
  const str = (v: string) => v.slice(0, INVENTORY_STRING);
  const size = (v: number) => (Number.isFinite(v) && v > 0 ? v : 0);
  const memory = inv.memory;
  return {
    runtimes: inv.runtimes.slice(0, INVENTORY_ENTRIES).map((r) => ({
      stackId: str(r.stackId),
      modelId: str(r.modelId),
      runtime: str(r.runtime),
      version: str(r.version),
      state: str(r.state),
      endpoint: str(r.endpoint),
      error: str(r.error),
      residency: r.residency === "on_demand" ? "on_demand" : "always",
      memoryBytes: size(r.memoryBytes),
      loaded: r.loaded === true,
    })),
    models: inv.models.slice(0, INVENTORY_ENTRIES).map((m) => ({
      name: str(m.name),
      format: str(m.format),
      sizeBytes: size(m.sizeBytes),
      path: str(m.path),
      sha256: str(m.sha256),
      stackIds: m.stackIds.slice(0, INVENTORY_ENTRIES).map(str),
    })),
    memory: memory ? { budgetBytes: size(memory.budgetBytes), usedBytes: size(memory.usedBytes), maxLoaded: size(memory.maxLoaded), loaded: size(memory.loaded) } : null,
  };
}

/** Longest string and most entries kept from an agent's hardware report. */
const HARDWARE_STRING = 256;
const HARDWARE_ENTRIES = 64;

/** An agent's hardware as stored: only the known fields, strings and lists cut to size. */
function toHardwareSummary(h: HardwareReport | undefined): HardwareSummary {
  const str = (v: string | undefined) => String(v ?? "").slice(0, HARDWARE_STRING);
  const num = (v: number | undefined) => (Number.isFinite(v) && v! > 0 ? v! : 0);
  return {
    platform: str(h?.platform),
    os: str(h?.os),
    arch: str(h?.arch),
    cpuModel: str(h?.cpuModel),
    cpuPhysicalCores: num(h?.cpuPhysicalCores),
    cpuLogicalCores: num(h?.cpuLogicalCores),
    memoryBytes: num(h?.memoryBytes),
    gpus: (h?.gpus ?? []).slice(0, HARDWARE_ENTRIES).map((g) => ({ vendor: str(g.vendor), model: str(g.model), vramBytes: num(g.vramBytes), driverVersion: str(g.driverVersion) })),
    disks: (h?.disks ?? []).slice(0, HARDWARE_ENTRIES).map((d) => ({ mount: str(d.mount), sizeBytes: num(d.sizeBytes), freeBytes: num(d.freeBytes) })),
    accelerators: (h?.accelerators ?? []).slice(0, HARDWARE_ENTRIES).map(str),
  };
}
