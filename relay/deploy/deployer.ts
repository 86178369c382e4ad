import type { EventBus } from "../events/index.js";
import type { MachineReach } from "../machines/index.js";
import type { Stack, Store } from "../store/index.js";
import type { DeploymentRunner } from "./deployment-runner.js";

/**
 * Moves stacks through their states and has their deployments run next to their machine's link, wherever it is
 * (`MachineReach`). Deploying to an offline machine leaves the stack `deploying` until the machine links; a
 * machine that links again gets its deployed stacks configured again (the runner of the relay it links to).
 */
export class Deployer {
  constructor(
    private readonly store: Store,
    private readonly machines: MachineReach,
    private readonly runner: DeploymentRunner,
    private readonly events: EventBus,
  ) {}

  /** Starts deploying a stack; returns it in its new `deploying` state. */
  async deploy(stackId: string): Promise<Stack> {
    const stack = await this.store.stacks.transition(stackId, "deploying");
    this.launch(stack);
    return stack;
  }

  /** Runs the deployment of a stack that is `deploying` already (an edit moved it there together with its new fields). */
  launch(stack: Stack): void {
    this.changed(stack);
    this.machines.at(stack.machineId).deploy(stack.id);
  }

  /**
   * Stops serving a stack; it ends as `draft`. A deployment still running is stopped first (on the machine
   * too), and its steps end as canceled, so nothing of it lands after the stack was removed.
   */
  async undeploy(stackId: string): Promise<Stack> {
    const stack = await this.store.stacks.transition(stackId, "undeploying");
    this.changed(stack);
    // Where the machine's link is; when none answers, a deployment of it running here still stops.
    if (!(await this.machines.at(stack.machineId).stop(stack.id))) await this.runner.stop(stack.machineId, stack.id);
    const undeployed = await this.store.stacks.transition(stackId, "draft");
    this.changed(undeployed);
    return undeployed;
  }

  /** Resolves once no deployment of this stack is running here (for tests and `--wait`). */
  settled(stackId: string): Promise<void> {
    return this.runner.settled(stackId);
  }

  /** Tells live pages that a stack or its deployment changed. */
  private changed(stack: Stack): void {
    this.events.emit({ type: "stack", orgId: stack.orgId, stackId: stack.id });
  }
}
