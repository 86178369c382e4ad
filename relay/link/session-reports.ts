import type { HardwareReport, Inventory, MachineLoad, RuntimeState, StackMetrics } from "../../proto/index.js";
import type { ResidencyEvent } from "../metrics/index.js";

/** What an agent reports on its own over the link. */
export interface SessionReports {
  onHardware?: (hardware: HardwareReport) => void;
  /** A stack's runtime changed state; `contextSize` (tokens), with `ready` ending an on-demand load: the context it loaded with. */
  onRuntimeState?: (stackId: string, state: RuntimeState, error: string | null, contextSize?: number) => void;
  /** An on-demand stack's model loaded (or failed to, `loaded` false) in `seconds`, or unloaded for `reason`. */
  onResidency?: (stackId: string, event: ResidencyEvent) => void;
  onInventory?: (inventory: Inventory) => void;
  onMetrics?: (stacks: StackMetrics[]) => void;
  /** The machine's load now (CPU, memory, GPUs). */
  onLoad?: (load: MachineLoad) => void;
  /** Whether the relay gave this machine the stack: a runtime state for any other is ignored. */
  ownsStack?: (stackId: string) => boolean;
  /** A runtime state came for a stack the machine was not given (ignored). */
  onForeignStack?: (stackId: string) => void;
  /** Whether the machine's credentials still hold in the database (not revoked, the same token). */
  credentialsHold?: () => Promise<boolean>;
  /** The relay is about to store a stack's runtime state itself: the agent's earlier word is not to be stored after it. */
  forgetRuntimeState?: (stackId: string) => void;
}
