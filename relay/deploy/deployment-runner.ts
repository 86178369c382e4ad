import { MakinaError, type DeployStep, type Logger } from "../../proto/index.js";
import type { AgentRegistry, AgentSession } from "../link/index.js";
import type { EventBus } from "../events/index.js";
import type { StorageHealth } from "../health/index.js";
import type { LocalDeployments } from "../machines/index.js";
import type { Stack, Store } from "../store/index.js";

/** The deploy sequence, in order: install the runtime, pull the model, configure the endpoint. */
export const DEPLOY_STEPS = ["install_runtime", "pull_model", "configure_endpoint"] as const;

/** Deploy progress is stored (and announced to live pages) at most this often per step. */
const PROGRESS_MIN_INTERVAL_MS = 200;

/**
 * Runs deployments on this relay's links: each stack's steps, in order, sent to its machine, recorded as they
 * go. A machine that links again gets its deployed stacks configured again. The relay holding a machine's link
 * runs its deployments (asked here, or by another relay): a relay that stops does not stop a deployment it
 * asked for.
 */
export class DeploymentRunner implements LocalDeployments {
  private readonly running = new Map<string, Promise<void>>();
  /** Per stack, what stops its deployments in progress (an undeploy aborts it). */
  private readonly cancels = new Map<string, AbortController>();
  /** Machines' stacks being looked up to resume, from the moment the machine came online. */
  private readonly resuming = new Set<Promise<unknown>>();
  /** The stacks whose deployment was asked on each link: resuming the link does not run them again. */
  private readonly askedOn = new WeakMap<AgentSession, Set<string>>();

  constructor(
    private readonly store: Store,
    private readonly registry: AgentRegistry,
    private readonly log: Logger,
    private readonly events: EventBus,
    /** A step the machine reports nothing of (no progress, no result) for this long fails its deployment. */
    private readonly stepIdleTimeoutMs: number,
    /** Where writes the database refuses are reported: a deployment it cannot record stops there, the relay goes on. */
    private readonly storage: StorageHealth,
  ) {
    registry.on("online", (session) => this.resume(session));
  }

  /**
   * Stops a stack here: a deployment still running is stopped first (on the machine too, its steps ending as
   * canceled), then the runtime is removed over the machine's link. Returns whether the link is here.
   */
  async stop(machineId: string, stackId: string): Promise<boolean> {
    this.cancels.get(stackId)?.abort(new MakinaError("canceled", "The stack was undeployed during its deployment."));
    this.cancels.delete(stackId);
    await this.settled(stackId);
    const session = this.registry.get(machineId);
    if (!session) return false;
    session.readyStacks.delete(stackId);
    await session.runCommand(stackId, { kind: "removeStack" }, { idleTimeoutMs: this.stepIdleTimeoutMs }).catch((err: unknown) => {
      this.log.warn("remove_stack failed; the stack is undeployed anyway", { stackId, err });
    });
    return true;
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
      // A stack deployed on this link while its stacks were being looked up is already running, or ran.
      const asked = this.askedOn.get(session);
      for (const stack of stacks) if ((stack.state === "deploying" || stack.state === "deployed") && !asked?.has(stack.id)) this.run(session, stack.id);
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

  /** Runs a stack's deployment on this link, after the one running (if any). */
  run(session: AgentSession, stackId: string): void {
    const asked = this.askedOn.get(session) ?? new Set<string>();
    this.askedOn.set(session, asked.add(stackId));
    const previous = this.running.get(stackId) ?? Promise.resolve();
    let cancel = this.cancels.get(stackId);
    if (!cancel) {
      cancel = new AbortController();
      this.cancels.set(stackId, cancel);
    }
    const { signal } = cancel;
    const next = previous
      .then(() => this.sequence(session, stackId, signal))
      .catch((err: unknown) => this.storage.failed("deployment", err))
      .finally(() => {
        if (this.running.get(stackId) === next) this.running.delete(stackId);
      });
    this.running.set(stackId, next);
  }

  private async sequence(session: AgentSession, stackId: string, signal: AbortSignal): Promise<void> {
    // The stack as it is now: one undeployed (or deployed again) since this run was asked for is not run.
    const stack = await this.store.stacks.get(stackId);
    if (!stack || stack.machineId !== session.machineId || (stack.state !== "deploying" && stack.state !== "deployed") || signal.aborted) return;
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
        residency: stack.residency,
        idleUnloadS: stack.idleUnloadS,
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
            // What the runtime found the model to be, for what the stack serves (an embedding model: no chats; a reranker: rerank only).
            if (result.embeddingModel || result.rankingModel) await this.store.deployments.stepDetail(deploymentId, seq, result.rankingModel ? { rankingModel: true } : { embeddingModel: true });
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
        // Ready before the stack turns deployed: the gateway routes to it from the moment it is (an on-demand
        // stack's model is loaded by its first request).
        session.readyStacks.add(stack.id);
        session.forgetRuntimeState(stack.id);
        // An on-demand stack the machine kept loaded (an edit, a reconnect) says what it serves; one unloaded, nothing.
        await this.store.stacks.setRuntimeState(stack.id, stack.residency === "on_demand" && contextSize === null ? "unloaded" : "ready", null);
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
