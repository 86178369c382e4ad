import type { MachineLog, StepResult } from "../../proto/index.js";
import type { ReceivedLoad } from "../link/index.js";
import type { InferenceTarget } from "../routing/index.js";
import type { LinkCarrier } from "./link-carrier.js";
import type { MachineCarrier, ModelCheck } from "./machine-carrier.js";

/** One machine, as the relay asks things of it, wherever its link is. */
export interface MachineHandle {
  readonly machineId: string;
  /** Where its inference requests go, or undefined when no relay holds its link. */
  readonly target: InferenceTarget | undefined;
  /** Runs a stack's deployment next to its link; false when no relay holds it (it runs when the machine links). */
  deploy(stackId: string): boolean;
  /** Stops a stack on it (its deployment, then its runtime); false when no link of it answered. */
  stop(stackId: string): Promise<boolean>;
  /** What it says of a model file; `machine_offline` when it cannot be asked now. */
  checkModel(check: ModelCheck, signal?: AbortSignal): Promise<StepResult>;
  /** Loads (`load`) or unloads an on-demand stack's model now; resolves once done, within `timeoutMs`. */
  loadModel(stackId: string, load: boolean, timeoutMs: number): Promise<void>;
  /** Its log (`stackId` "": the agent's own; else that stack's), the lines after `after`, at most `limit`. */
  readLog(stackId: string, after: number, limit: number): Promise<MachineLog>;
  /** Its latest load, or undefined when unknown. */
  load(): Promise<ReceivedLoad | undefined>;
}

/**
 * The one seam between the relay and its machines: `at(id)` is a machine wherever it is linked, on this relay
 * (its link) or on another (through that relay, over NATS, with `--nats`). The deployer, the Forge's file looks,
 * the overview's loads and the gateway's routing all go through it; none asks where a machine is linked.
 */
export class MachineReach {
  /**
   * Where the gateway's routing finds each machine ({@link target}); with one carrier (no `--nats`), this relay's
   * links themselves, so a request pays for no seam it does not use.
   */
  readonly targets: { get(machineId: string): InferenceTarget | undefined };

  constructor(
    private readonly here: LinkCarrier,
    /** The other relays' machines (`--nats`); none without. */
    private readonly elsewhere?: MachineCarrier,
  ) {
    this.targets = elsewhere ? { get: (machineId) => this.target(machineId) } : here.targets;
  }

  /** The carrier for a machine now: its link here when open, else the other relays' when there are some. */
  private carrier(machineId: string): MachineCarrier {
    return this.here.holds(machineId) || !this.elsewhere ? this.here : this.elsewhere;
  }

  at(machineId: string): MachineHandle {
    const carrier = this.carrier(machineId);
    const target = () => this.target(machineId);
    return {
      machineId,
      get target() {
        return target();
      },
      deploy: (stackId) => carrier.deploy(machineId, stackId),
      stop: (stackId) => carrier.stop(machineId, stackId),
      checkModel: (check, signal) => carrier.checkModel(machineId, check, signal),
      loadModel: (stackId, load, timeoutMs) => carrier.loadModel(machineId, stackId, load, timeoutMs),
      readLog: (stackId, after, limit) => carrier.readLog(machineId, stackId, after, limit),
      load: async () => (await carrier.loads([machineId])).get(machineId),
    };
  }

  /**
   * Where a machine's requests go (the gateway's routing asks for each candidate of each request): its link here
   * when open, else the relay holding it, else the link here that is closing (routing skips it, saying why).
   */
  target(machineId: string): InferenceTarget | undefined {
    const local = this.here.target(machineId);
    if (local?.state === "open" || !this.elsewhere) return local;
    return this.elsewhere.target(machineId) ?? local;
  }

  /** The latest load of each of these machines, wherever each is linked (unknown ones left out). */
  async loads(machineIds: readonly string[]): Promise<Map<string, ReceivedLoad>> {
    const found = await this.here.loads(machineIds);
    const rest = machineIds.filter((id) => !found.has(id));
    if (this.elsewhere && rest.length > 0) for (const [id, load] of await this.elsewhere.loads(rest)) found.set(id, load);
    return found;
  }
}
