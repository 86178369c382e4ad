import { MakinaError, type MachineLog, type StepResult } from "../../proto/index.js";
import type { AgentRegistry, AgentSession, ReceivedLoad, MachineLoads } from "../link/index.js";
import type { InferenceTarget } from "../routing/index.js";
import type { MachineCarrier, ModelCheck } from "./machine-carrier.js";
import { cleanLog } from "./machine-log.js";

/** The deployments run on this relay's links (relay/deploy's runner). */
export interface LocalDeployments {
  /** Runs a stack's deployment on this link (after the one running, if any). */
  run(session: AgentSession, stackId: string): void;
  /** Stops a stack's deployment here and removes its runtime over this link; false when the machine is not linked here. */
  stop(machineId: string, stackId: string): Promise<boolean>;
}

/** How long a machine has to answer a look at a model file once asked. */
const CHECK_IDLE_MS = 5000;

/** The machines linked to this relay, reached over their links. */
export class LinkCarrier implements MachineCarrier {
  constructor(
    private readonly registry: AgentRegistry,
    private readonly machineLoads: MachineLoads,
    private readonly deployments: LocalDeployments,
  ) {}

  /** This relay's links, as routing reads them (the registry itself: nothing in between on the request path). */
  get targets(): { get(machineId: string): InferenceTarget | undefined } {
    return this.registry;
  }

  /** Whether the machine's link is open on this relay now. */
  holds(machineId: string): boolean {
    return this.registry.get(machineId)?.state === "open";
  }

  target(machineId: string): InferenceTarget | undefined {
    return this.registry.get(machineId);
  }

  deploy(machineId: string, stackId: string): boolean {
    const session = this.registry.get(machineId);
    if (session) this.deployments.run(session, stackId);
    return session !== undefined;
  }

  stop(machineId: string, stackId: string): Promise<boolean> {
    return this.deployments.stop(machineId, stackId);
  }

  checkModel(machineId: string, check: ModelCheck, signal?: AbortSignal): Promise<StepResult> {
    const session = this.registry.get(machineId);
    if (!session || session.state !== "open") return Promise.reject(new MakinaError("machine_offline", "The machine is not linked to this relay."));
    return session.runCommand("", check, { signal, idleTimeoutMs: CHECK_IDLE_MS });
  }

  async readLog(machineId: string, stackId: string, after: number, limit: number): Promise<MachineLog> {
    const session = this.registry.get(machineId);
    if (!session || session.state !== "open") throw new MakinaError("machine_offline", "The machine is not linked to this relay.");
    const { logLines, logTruncated } = await session.runCommand(stackId, { kind: "readLog", after, limit }, { idleTimeoutMs: CHECK_IDLE_MS });
    // What the agent sent is checked as any peer's: so many lines, each a line.
    const clean = cleanLog(logLines, logTruncated, limit);
    if (!clean) throw new MakinaError("machine_offline", "The machine answered with something that is not its log.");
    return clean;
  }

  async loadModel(machineId: string, stackId: string, load: boolean, timeoutMs: number): Promise<void> {
    const session = this.registry.get(machineId);
    if (!session || session.state !== "open") throw new MakinaError("machine_offline", "The machine is not linked to this relay.");
    await session.runCommand(stackId, { kind: "loadModel", load }, { idleTimeoutMs: timeoutMs });
  }

  async loads(machineIds: readonly string[]): Promise<Map<string, ReceivedLoad>> {
    const found = new Map<string, ReceivedLoad>();
    for (const id of machineIds) {
      const load = this.machineLoads.get(id);
      if (load) found.set(id, load);
    }
    return found;
  }
}
