import type { DeployStep, MachineLog, StepResult } from "../../proto/index.js";
import type { ReceivedLoad } from "../link/index.js";
import type { InferenceTarget } from "../routing/index.js";

/** A look at a model file on a machine. */
export type ModelCheck = Extract<DeployStep, { kind: "checkModel" }>;

/**
 * One way the relay reaches machines: over its own links (`LinkCarrier`), or through the relay holding a machine's
 * link, over NATS (relay/cluster). Each operation the relay asks of a machine is one method here, and both carriers
 * have it; `MachineReach` picks the carrier, so no caller asks where a machine is linked.
 */
export interface MachineCarrier {
  /** Where the machine's inference requests go through this carrier, or undefined when it does not reach it. */
  target(machineId: string): InferenceTarget | undefined;
  /**
   * Runs a stack's deployment next to the machine's link (where its steps go, and where the deployment goes on
   * when the relay that asked stops). False when this carrier knows no link of the machine; the deployment then
   * runs when the machine links again.
   */
  deploy(machineId: string, stackId: string): boolean;
  /** Stops a stack on the machine (its deployment, then its runtime); false when no link of it answered. */
  stop(machineId: string, stackId: string): Promise<boolean>;
  /** What the machine says of a model file; `machine_offline` when it cannot be asked now. */
  checkModel(machineId: string, check: ModelCheck, signal?: AbortSignal): Promise<StepResult>;
  /**
   * Loads (`load`) or unloads an on-demand stack's model on the machine now, resolving once it is done, within
   * `timeoutMs`; `machine_offline` when it cannot be asked, else the machine's reason why not.
   */
  loadModel(machineId: string, stackId: string, load: boolean, timeoutMs: number): Promise<void>;
  /**
   * The machine's log (`stackId` "": the agent's own lines; else that stack's), the lines after `after`, at most
   * `limit`; `machine_offline` when it cannot be asked now.
   */
  readLog(machineId: string, stackId: string, after: number, limit: number): Promise<MachineLog>;
  /** The latest load of each of these machines this carrier reaches (the others left out). */
  loads(machineIds: readonly string[]): Promise<Map<string, ReceivedLoad>>;
}
