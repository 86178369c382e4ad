import { MakinaError, type DeployStep, type Logger } from "../../proto/index.js";
import type { AgentRegistry, AgentSession } from "../link/index.js";
import type { EventBus } from "../events/index.js";
import type { StorageHealth } from "../health/index.js";
import type { Stack, Store } from "../store/index.js";

/** The deploy sequence, in order: install the runtime, pull the model, configure the endpoint. */
export const DEPLOY_STEPS = ["install_runtime", "pull_model", "configure_endpoint"] as const;

/** Deploy progress is stored (and announced to live pages) at most this often per step. */
const PROGRESS_MIN_INTERVAL_MS = 200;

/** Where deployments for machines linked to other relays go (relays joined over NATS). */
export interface DeploymentsElsewhere {
  /** Asks the relay holding the machine's link to run the stack's deployment; false when no relay holds it. */
  deploy(stack: Stack): boolean;
  /** Asks that relay to stop the stack there (its deployment, then its runtime); false when no relay holds it. */
  stop(stack: Stack): Promise<boolean>;
}

/**
 * Runs deployments: moves stacks through their states and sends each step to
 * the stack's machine. Deploying to an offline machine leaves the stack
 * `deploying` until the machine connects; a machine that reconnects gets its
 * deployed stacks configured again.
 */
export class Deployer {
  private readonly running = new Map<string, Promise<void>>();
  /** Per stack, what stops its deployments in progress (an undeploy aborts it). */
  private readonly cancels = new Map<string, AbortController>();
  /** Machines' stacks being looked up to resume, from the moment the machine came online. */
  private readonly resuming = new Set<Promise<unknown>>();
  private elsewhere: DeploymentsElsewhere | undefined;

  constructor(
    private readonly store: Store,
    private readonly registry: AgentRegistry,
    private readonly log: Logger,
    private readonly events: EventBus,
    /** A step the machine reports nothing of (no progress, no result) for this long fails its deployment. */
    private readonly stepIdleTimeoutMs = 30 * 60_000,
    /** Where writes the database refuses are reported: a deployment it cannot record stops there, the relay goes on. */
    private readonly storage: StorageHealth,
  ) {
    registry.on("online", (session) => this.resume(session));
  }

  /** Sends deployments for machines this relay does not link to the relay that does. */
  reachOthers(elsewhere: DeploymentsElsewhere): void {
    this.elsewhere = elsewhere;
  }

  /**
   * Starts deploying a stack; returns it in its new `deploying` state. Run by this relay when it holds the
   * machine's link, by the relay that does otherwise, and when the machine links again if none does.
   */
  async deploy(stackId: string): Promise<Stack> {
    const stack = await this.store.stacks.transition(stackId, "deploying");
    this.launch(stack);
    return stack;
  }

  /**
   * Runs the deployment of a stack that is `deploying` already (an edit moved it there together with its new
   * fields): here when this relay holds its machine's link, on the relay that does otherwise.
   */
  launch(stack: Stack): void {
    this.changed(stack);
    const session = this.registry.get(stack.machineId);
    if (session) this.run(session, stack);
    else this.elsewhere?.deploy(stack);
  }

  /** Runs a stack's deployment another relay was asked for, when this relay holds its machine's link. */
  async deployHere(stackId: string): Promise<void> {
    const stack = await this.store.stacks.get(stackId);
    const session = stack && this.registry.get(stack.machineId);
    if (stack && session && (stack.state === "deploying" || stack.state === "deployed")) this.run(session, stack);
  }

  /**
   * Stops a stack on this relay's link to its machine: a deployment still running is stopped first (on the
   * machine too, its steps ending as canceled), then the runtime is removed. Returns whether the link is here.
   */
  async stopHere(stackId: string): Promise<boolean> {
    this.cancels.get(stackId)?.abort(new MakinaError("canceled", "The stack was undeployed during its deployment."));
    this.cancels.delete(stackId);
    await this.settled(stackId);
    const stack = await this.store.stacks.get(stackId);
    const session = stack && this.registry.get(stack.machineId);
    if (!session) return false;
    session.readyStacks.delete(stackId);
    await session.runCommand(stackId, { kind: "removeStack" }, { idleTimeoutMs: this.stepIdleTimeoutMs }).catch((err: unknown) => {
      this.log.warn("remove_stack failed; the stack is undeployed anyway", { stackId, err });
    });
    return true;
  }

  /**
   * Stops serving a stack; it ends as `draft`. A deployment still running is stopped first (on the machine
   * too), and its steps end as canceled, so nothing of it lands after the stack was removed.
   */
  async undeploy(stackId: string): Promise<Stack> {
    const stack = await this.store.stacks.transition(stackId, "undeploying");
    this.changed(stack);
    // Where the machine's link is: here, or on the relay that holds it (whose deployment of it stops too).
    if (this.registry.get(stack.machineId) || !(await this.elsewhere?.stop(stack))) await this.stopHere(stackId);
    const undeployed = await this.store.stacks.transition(stackId, "draft");
    this.changed(undeployed);
    return undeployed;
  }

  /** Tells live pages that a stack or its deployment changed. */
  private changed(stack: Stack): void {
    this.events.emit({ type: "stack", orgId: stack.orgId, stackId: stack.id });
  }

  /** Resolves once no deployment of this stack is running (for tests and `--wait`). */
  async settled(stackId: string): Promise<void> {
    // A machine that just came online has its stacks read from the database before their deployments start.
    await Promise.all(this.resuming);
    await this.running.get(stackId);
  }

  /**
   * Runs the deployments of a machine that came online. When the database cannot say which (thousands of
   * machines linking at once can keep every pooled connection busy for seconds), it is asked again for as long
   * as the machine stays linked: its stacks are never left undeployed. {@link settled} waits for the first
   * lookup only, never for a database that is down.
   */
  private resume(session: AgentSession): void {
    const lookup = () => this.store.stacks.listByMachine(session.machineId);
    const runAll = (stacks: Stack[]) => {
      for (const stack of stacks) if (stack.state === "deploying" || stack.state === "deployed") this.run(session, stack);
    };
    const first: Promise<unknown> = this.storage
      .attempt("deployments to resume", lookup)
      .then((stacks) => {
        if (stacks) return runAll(stacks);
        void this.storage.attemptWhile("deployments to resume", lookup, () => this.registry.get(session.machineId) === session, 1000).then((found) => found && runAll(found.value));
      })
      .finally(() => this.resuming.delete(first));
    this.resuming.add(first);
  }

  private run(session: AgentSession, stack: Stack): void {
    const previous = this.running.get(stack.id) ?? Promise.resolve();
    let cancel = this.cancels.get(stack.id);
    if (!cancel) {
      cancel = new AbortController();
      this.cancels.set(stack.id, cancel);
    }
    const { signal } = cancel;
    const next = previous
      .then(() => this.sequence(session, stack, signal))
      .catch((err: unknown) => this.storage.failed("deployment", err))
      .finally(() => {
        if (this.running.get(stack.id) === next) this.running.delete(stack.id);
      });
    this.running.set(stack.id, next);
  }

  private async sequence(session: AgentSession, asked: Stack, signal: AbortSignal): Promise<void> {
    // The stack as it is now: one undeployed (or deployed again) since this run was asked for is not run.
    const stack = await this.store.stacks.get(asked.id);
    if (!stack || (stack.state !== "deploying" && stack.state !== "deployed") || signal.aborted) return;
    const log = this.log.child({ stackId: stack.id, machineId: stack.machineId });
    const deploymentId = await this.store.deployments.start(stack.id, DEPLOY_STEPS);
    const changed = () => this.changed(stack);
    changed();
    const steps: DeployStep[] = [
      { kind: "installRuntime", runtime: stack.runtime },
      { kind: "pullModel", ref: stack.modelRef, sha256: stack.modelSha256 ?? "", runtime: stack.runtime },
      {
        kind: "configureEndpoint",
        runtime: stack.runtime,
        modelRef: stack.modelRef,
        modelId: stack.modelId,
        harness: stack.harness ?? "",
        harnessOptionsJson: stack.harness ? JSON.stringify(stack.harnessOptions) : "",
        orchestrator: stack.orchestrator ?? "",
        orchestratorOptionsJson: stack.orchestrator ? JSON.stringify(stack.orchestratorOptions) : "",
        maxContext: stack.maxContext ?? 0,
      },
    ];
    let contextSize: number | null = null;
    try {
      for (const [seq, step] of steps.entries()) {
        signal.throwIfAborted();
        await this.store.deployments.stepRunning(deploymentId, seq);
        changed();
        let progressAt = 0;
        try {
          const result = await session.runCommand(stack.id, step, {
            signal,
            idleTimeoutMs: this.stepIdleTimeoutMs,
            onProgress: (p) => {
              // Progress is news, not record: at most every 200 ms (a machine flooding reports costs nothing more),
              // and one the database refuses is skipped (the next one may land).
              const now = Date.now();
              if (now - progressAt < PROGRESS_MIN_INTERVAL_MS) return;
              progressAt = now;
              void this.storage
                .attempt("deploy progress", () =>
                  this.store.deployments.stepDetail(deploymentId, seq, { stage: p.stage, doneBytes: p.doneBytes, totalBytes: p.totalBytes, bytesPerSecond: p.bytesPerSecond, etaSeconds: p.etaSeconds }),
                )
                .then(changed);
            },
          });
          if (step.kind === "pullModel") {
            await this.store.deployments.stepDetail(deploymentId, seq, { path: result.modelPath, sha256: result.modelSha256, sizeBytes: result.modelSizeBytes });
          }
          if (step.kind === "configureEndpoint") {
            contextSize = result.contextSize || null;
            // What the runtime found the model to be, for what the stack serves (an embedding model: no chats).
            if (result.embeddingModel) await this.store.deployments.stepDetail(deploymentId, seq, { embeddingModel: true });
          }
          await this.store.deployments.stepFinished(deploymentId, seq, null);
          changed();
        } catch (err) {
          await this.store.deployments.stepFinished(deploymentId, seq, MakinaError.from(err).message);
          changed();
          throw err;
        }
      }
      await this.store.deployments.finish(deploymentId, null);
      const current = await this.store.stacks.get(stack.id);
      if (current?.state === "deploying" || current?.state === "deployed") {
        // Ready before the stack turns deployed: the gateway routes to it from the moment it is.
        session.readyStacks.add(stack.id);
        session.forgetRuntimeState(stack.id);
        await this.store.stacks.setRuntimeState(stack.id, "ready", null);
        if (current.state === "deploying") await this.store.stacks.transition(stack.id, "deployed", { contextSize });
      }
      changed();
      log.info("stack deployed", { contextSize });
    } catch (err) {
      const e = MakinaError.from(err);
      await this.store.deployments.finish(deploymentId, e.message);
      if (e.code === "machine_offline") {
        // The link went away mid-deploy: the sequence runs again when the machine reconnects.
        log.warn("deploy interrupted: machine went offline");
        changed();
        return;
      }
      const current = await this.store.stacks.get(stack.id);
      if (current?.state === "deploying" || current?.state === "deployed") await this.store.stacks.transition(stack.id, "failed", { error: e.message });
      changed();
      log.error("deploy failed", { err: e, cause: e.cause });
    }
  }
}
