import { Server, ServerCredentials, status, type ServerDuplexStream } from "@grpc/grpc-js";
import {
  AUTHORIZATION_METADATA,
  AgentLinkService,
  MACHINE_ID_METADATA,
  PROTOCOL_VERSION,
  type AgentMessage,
  type HardwareReport,
  type Inventory,
  type Logger,
  type RelayMessage,
} from "../../proto/index.js";
import type { EventBus } from "../events/index.js";
import { hashSecret, hashesEqual } from "../keys/index.js";
import type { HardwareSummary, MachineInventory, Store } from "../store/index.js";
import type { AgentRegistry } from "./agent-registry.js";
import { AgentSession } from "./agent-session.js";

/** Options of {@link startLinkServer}. */
export interface LinkServerOptions {
  store: Store;
  registry: AgentRegistry;
  log: Logger;
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** Heartbeat interval asked of agents, in ms; a link silent for 3.5 intervals is dropped. */
  heartbeatIntervalMs: number;
  /** Where machine changes (online, offline, hardware) and runtime states are announced. */
  events: EventBus;
}

/** The running gRPC server agents dial. */
export interface LinkServer {
  readonly port: number;
  /** Stops accepting links and ends every open one. Idempotent. */
  stop(): Promise<void>;
}

const HELLO_TIMEOUT_MS = 10_000;

/** Starts the gRPC server that agents connect to. */
export async function startLinkServer(options: LinkServerOptions): Promise<LinkServer> {
  const { store, registry, log } = options;
  const server = new Server({
    // Ping idle agents so a vanished peer is noticed within seconds even without heartbeats.
    "grpc.keepalive_time_ms": 2_000,
    "grpc.keepalive_timeout_ms": 2_000,
    "grpc.keepalive_permit_without_calls": 1,
    "grpc.http2.min_ping_interval_without_data_ms": 1_000,
    "grpc.max_receive_message_length": 8 * 1024 * 1024,
  });

  server.addService(AgentLinkService, {
    connect: (call: ServerDuplexStream<AgentMessage, RelayMessage>) => handleLink(call),
  });

  function reject(call: ServerDuplexStream<AgentMessage, RelayMessage>, code: status, details: string): void {
    call.emit("error", { code, details });
  }

  function handleLink(call: ServerDuplexStream<AgentMessage, RelayMessage>): void {
    const machineId = String(call.metadata.get(MACHINE_ID_METADATA)[0] ?? "");
    const auth = String(call.metadata.get(AUTHORIZATION_METADATA)[0] ?? "");
    const token = /^Bearer\s+(\S+)$/i.exec(auth)?.[1] ?? "";
    const machine = machineId ? store.machines.get(machineId) : undefined;
    if (machine?.revokedAt) {
      log.warn("link refused: the machine is revoked", { machineId, peer: call.getPeer() });
      reject(call, status.UNAUTHENTICATED, "This machine was revoked; add it again to get a new token.");
      return;
    }
    const storedHash = machine ? store.machines.tokenHash(machine.id) : undefined;
    if (!machine || !storedHash || !hashesEqual(storedHash, hashSecret(token))) {
      log.warn("link refused: bad machine credentials", { machineId, peer: call.getPeer() });
      reject(call, status.UNAUTHENTICATED, "Unknown machine ID or machine token rejected.");
      return;
    }
    const linkLog = log.child({ machineId });
    const machineChanged = () => options.events.emit({ type: "machine", orgId: machine.orgId, machineId: machine.id });
    const helloTimer = setTimeout(() => reject(call, status.DEADLINE_EXCEEDED, "No hello received."), HELLO_TIMEOUT_MS);

    call.once("data", (first: AgentMessage) => {
      clearTimeout(helloTimer);
      if (first.body?.$case !== "hello") {
        reject(call, status.INVALID_ARGUMENT, "The first message on the link must be a hello.");
        return;
      }
      const hello = first.body.value;
      if (hello.protocolVersion !== PROTOCOL_VERSION) {
        reject(call, status.FAILED_PRECONDITION, `Protocol version ${hello.protocolVersion} is not supported; this relay speaks ${PROTOCOL_VERSION}.`);
        return;
      }
      const session = new AgentSession(machine.id, machine.orgId, call, linkLog, {
        onHardware: (hardware) => {
          store.machines.updateHardware(machine.id, toHardwareSummary(hardware));
          machineChanged();
          linkLog.info("hardware changed");
        },
        onInventory: (inventory) => {
          store.machines.setInventory(machine.id, boundedInventory(inventory));
          machineChanged();
        },
        onRuntimeStatus: (stackId, state, error) => {
          linkLog.info("runtime state", { stackId, state, error });
          // The stack stays deployed: its requests get 503 runtime_unavailable until the runtime is ready again or redeployed.
          if (store.stacks.get(stackId)?.machineId === machine.id) {
            store.stacks.setRuntimeState(stackId, state, error);
            options.events.emit({ type: "stack", orgId: machine.orgId, stackId });
          }
        },
      });
      // One timer per link checks how long the agent has been silent (every message counts), rather than
      // a timer re-armed for every message, which cost the relay a timer per streamed chunk.
      const silenceMs = options.heartbeatIntervalMs * 3.5;
      const tickMs = Math.max(50, Math.floor(options.heartbeatIntervalMs / 2));
      let lastTick = Date.now();
      let graceUntil = 0;
      const watchdog = setInterval(() => {
        const now = Date.now();
        const stalled = now - lastTick - tickMs > options.heartbeatIntervalMs;
        lastTick = now;
        // A tick that comes late means this process was stalled, not that the agent was silent:
        // give the agent's queued messages a full silence period to arrive before judging it.
        if (stalled) graceUntil = now + silenceMs;
        if (now < graceUntil || now - session.lastSeenAt <= silenceMs) return;
        linkLog.warn("link silent, dropping it", { silentMs: now - session.lastSeenAt });
        finish();
        call.destroy();
      }, tickMs);
      let finished = false;
      const finish = () => {
        if (finished) return;
        finished = true;
        clearInterval(watchdog);
        session.close();
        if (registry.remove(session)) {
          store.machines.markOffline(machine.id);
          machineChanged();
        }
      };
      call.on("data", (msg: AgentMessage) => session.handle(msg));
      call.on("end", () => {
        finish();
        call.end();
      });
      call.on("error", finish);
      call.on("cancelled", finish);
      call.on("close", finish);

      store.machines.markOnline(machine.id, { hardware: toHardwareSummary(hello.hardware), agentVersion: hello.agentVersion });
      machineChanged();
      session.send({
        body: { $case: "welcome", value: { machineId: machine.id, heartbeatIntervalMs: options.heartbeatIntervalMs, protocolVersion: PROTOCOL_VERSION } },
      });
      linkLog.info("machine online", { agentVersion: hello.agentVersion, peer: call.getPeer() });
      registry.add(session);
    });
  }

  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${options.host}:${options.port}`, ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );

  let stopping: Promise<void> | undefined;
  return {
    port,
    stop() {
      stopping ??= new Promise<void>((resolve) => {
        for (const s of registry.all()) s.end();
        const force = setTimeout(() => server.forceShutdown(), 2_000);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      return stopping;
    },
  };
}

/** Longest string kept from an agent's inventory, and most entries: a machine cannot grow the database without bound. */
const INVENTORY_STRING = 1024;
const INVENTORY_ENTRIES = 256;

/** An agent's inventory as stored: strings and lists cut to size. */
function boundedInventory(inv: Inventory): MachineInventory {
  const str = (v: string) => v.slice(0, INVENTORY_STRING);
  return {
    runtimes: inv.runtimes.slice(0, INVENTORY_ENTRIES).map((r) => ({
      stackId: str(r.stackId),
      modelId: str(r.modelId),
      runtime: str(r.runtime),
      version: str(r.version),
      state: str(r.state),
      endpoint: str(r.endpoint),
      error: str(r.error),
    })),
    models: inv.models.slice(0, INVENTORY_ENTRIES).map((m) => ({
      name: str(m.name),
      format: str(m.format),
      sizeBytes: Math.max(0, m.sizeBytes),
      path: str(m.path),
      sha256: str(m.sha256),
      stackIds: m.stackIds.slice(0, INVENTORY_ENTRIES).map(str),
    })),
  };
}

function toHardwareSummary(h: HardwareReport | undefined): HardwareSummary {
  return {
    platform: h?.platform ?? "",
    os: h?.os ?? "",
    arch: h?.arch ?? "",
    cpuModel: h?.cpuModel ?? "",
    cpuPhysicalCores: h?.cpuPhysicalCores ?? 0,
    cpuLogicalCores: h?.cpuLogicalCores ?? 0,
    memoryBytes: h?.memoryBytes ?? 0,
    gpus: (h?.gpus ?? []).map((g) => ({ vendor: g.vendor, model: g.model, vramBytes: g.vramBytes, driverVersion: g.driverVersion })),
    disks: (h?.disks ?? []).map((d) => ({ mount: d.mount, sizeBytes: d.sizeBytes, freeBytes: d.freeBytes })),
    accelerators: h?.accelerators ?? [],
  };
}
