import { MakinaError, toLinkError, type AgentMessage, type InferenceEnd, type InferenceRequest, type Logger } from "../../proto/index.js";
import type { StackHost } from "../stacks/stack-host.js";
import { CreditGate } from "./credit-gate.js";

interface Active {
  controller: AbortController;
  gate: CreditGate;
}

/**
 * Serves inference requests arriving over the link: runs each on its stack's
 * runtime, sends chunks only against the relay's credits, and aborts the
 * runtime when the relay cancels or the link is lost.
 */
export class InferenceDispatcher {
  private readonly active = new Map<string, Active>();
  /** Chunks of text sent since start (observability: tests watch generation stop). */
  chunksSent = 0;
  /** Requests that ended because the relay canceled them (client gone, deadline). */
  canceled = 0;

  constructor(
    private readonly host: StackHost,
    private readonly send: (message: AgentMessage) => void,
    private readonly log: Logger,
  ) {}

  get inFlight(): number {
    return this.active.size;
  }

  /** Requests held back because the relay has not returned credit (a slow HTTP client). */
  get stalled(): number {
    let n = 0;
    for (const a of this.active.values()) if (a.gate.waiting) n++;
    return n;
  }

  start(request: InferenceRequest): void {
    const active: Active = { controller: new AbortController(), gate: new CreditGate(request.initialCredit) };
    this.active.set(request.requestId, active);
    void this.serve(request, active).finally(() => this.active.delete(request.requestId));
  }

  cancel(requestId: string, reason: string): void {
    this.active.get(requestId)?.controller.abort(new MakinaError("canceled", reason));
  }

  credit(requestId: string, credits: number): void {
    this.active.get(requestId)?.gate.add(credits);
  }

  /** Aborts every request (the link is gone, so nobody is listening). */
  abortAll(reason: string): void {
    for (const a of this.active.values()) a.controller.abort(new MakinaError("canceled", reason));
  }

  private async serve(request: InferenceRequest, active: Active): Promise<void> {
    const { requestId } = request;
    const signal = active.controller.signal;
    const log = this.log.child({ requestId, stackId: request.stackId });
    const usage = { promptTokens: 0, completionTokens: 0 };
    const end = (outcome: InferenceEnd["outcome"]) =>
      this.send({ body: { $case: "inferenceEnd", value: { requestId, outcome, usage: { promptTokens: usage.promptTokens, completionTokens: usage.completionTokens } } } });
    try {
      const runtime = this.host.runtime(request.stackId);
      if (!runtime) throw new MakinaError("runtime_unavailable", "The runtime for this stack is not running on the machine.", { retryAfterMs: 5000 });
      const { requestId: _id, stackId: _stack, initialCredit: _credit, ...input } = request;
      const events = runtime.chat(input, { signal, usage });
      for await (const ev of events) {
        if (ev.type === "text") {
          await active.gate.take(signal);
          this.send({ body: { $case: "inferenceChunk", value: { requestId, text: ev.text } } });
          this.chunksSent++;
        } else {
          end({ $case: "done", value: { finishReason: ev.finishReason } });
        }
      }
    } catch (err) {
      if (signal.aborted) {
        // The relay still wants the usage of a canceled request: its tokens count toward the key's limits.
        log.info("request canceled", { reason: (signal.reason as Error | undefined)?.message, completionTokens: usage.completionTokens });
        this.canceled++;
        end({ $case: "done", value: { finishReason: "canceled" } });
        return;
      }
      const e = MakinaError.from(err);
      if (e.code === "internal_error") log.error("inference failed", { err, cause: e.cause });
      end({ $case: "error", value: toLinkError(e) });
    }
  }
}
