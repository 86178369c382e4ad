import { MakinaError, toErrorReport, type AgentToRelay, type Logger, type RelayToAgent } from "../../proto/index.js";
import type { StackHost } from "../stacks/stack-host.js";
import type { InferenceDispatcher } from "./inference-dispatcher.js";

/**
 * What the agent does with each message from the relay: inference requests, cancels and credits go to
 * the dispatcher, deployment steps to the stack host (each answered with its result or its error).
 */
export class RelayMessageHandler {
  private readonly commands = new Map<string, AbortController>();

  constructor(
    private readonly deps: {
      inference: InferenceDispatcher;
      host: StackHost;
      send: (message: AgentToRelay) => void;
      /** A deployment step finished (the machine's inventory may have changed). */
      onStepDone: () => void;
      log: Logger;
    },
  ) {}

  handle(message: RelayToAgent): void {
    const { inference } = this.deps;
    switch (message.type) {
      case "infer":
        return inference.start(message);
      case "cancel":
        return inference.cancel(message.requestId, message.reason);
      case "credit":
        return inference.credit(message.requestId, message.credits);
      case "command":
        return this.runStep(message);
      case "cancelCommand":
        this.commands.get(message.commandId)?.abort(new MakinaError("canceled", message.reason));
        return;
      case "welcome":
        return;
    }
  }

  /** The link is gone: nobody waits for what runs, so every request and step stops. */
  linkLost(reason: string): void {
    this.deps.inference.abortAll(reason);
    for (const c of this.commands.values()) c.abort(new MakinaError("canceled", reason));
  }

  private runStep(command: Extract<RelayToAgent, { type: "command" }>): void {
    const { host, send, log } = this.deps;
    const { commandId, stackId, step } = command;
    const controller = new AbortController();
    this.commands.set(commandId, controller);
    host
      .run(stackId, step, (progress) => send({ type: "progress", commandId, progress }), controller.signal)
      .then(
        (result) => send({ type: "result", commandId, result }),
        (err: unknown) => {
          const e = MakinaError.from(err);
          // A model file the relay looked for and did not find is an answer, not a failure of this machine.
          if (step.kind === "checkModel" || step.kind === "readLog") log.debug(`${step.kind}: not answered`, { err: e });
          else log.warn("command failed", { stackId, step: step.kind, err: e, cause: e.cause });
          send({ type: "stepFailed", commandId, error: toErrorReport(e) });
        },
      )
      .finally(() => {
        this.commands.delete(commandId);
        // A look at a file changes nothing this machine hosts: no new inventory for it.
        if (step.kind !== "checkModel" && step.kind !== "readLog") this.deps.onStepDone();
      });
  }
}
