import { MakinaError, Slots, toErrorReport, type AgentToRelay, type Logger, type RelayToAgent, type StackMetrics } from "../../proto/index.js";
import type { StackHost } from "../stacks/stack-host.js";
import { CreditGate } from "../flow/index.js";
import { hasImageUrls, inlineImages, type ImageFetchOptions } from "./inline-images.js";

interface Active {
  stackId: string;
  controller: AbortController;
  gate: CreditGate;
}

/**
 * Serves inference requests arriving over the link: runs each on its stack's
 * runtime, sends text only against the relay's credits, and aborts the
 * runtime when the relay cancels or the link is lost.
 */
export class InferenceDispatcher {
  private readonly active = new Map<string, Active>();
  /** Totals per stack since start, for the metrics sent to the relay. */
  private readonly totals = new Map<string, Omit<StackMetrics, "stackId" | "inFlight" | "waitingForCredit">>();
  /** Chunks of text sent since start (observability: tests watch generation stop). */
  chunksSent = 0;
  /** Requests that ended because the relay canceled them (client gone, deadline). */
  canceled = 0;

  constructor(
    private readonly host: StackHost,
    private readonly send: (message: AgentToRelay) => void,
    private readonly log: Logger,
    /** How the images requests name by URL are fetched, to be put inline before any runtime sees them. */
    private readonly images: ImageFetchOptions = {},
  ) {}

  /** Two requests put their images inline at a time; the others wait their turn. */
  private readonly inlining = new Slots(2);

  get inFlight(): number {
    return this.active.size;
  }

  /** Requests held back because the relay has not returned credit (a slow HTTP client). */
  get stalled(): number {
    let n = 0;
    for (const a of this.active.values()) if (a.gate.waiting) n++;
    return n;
  }

  start(request: Extract<RelayToAgent, { type: "infer" }>): void {
    const active: Active = { stackId: request.stackId, controller: new AbortController(), gate: new CreditGate(request.credit) };
    this.active.set(request.requestId, active);
    void this.serve(request, active).finally(() => this.active.delete(request.requestId));
  }

  cancel(requestId: string, reason: string): void {
    this.active.get(requestId)?.controller.abort(new MakinaError("canceled", reason));
  }

  credit(requestId: string, credits: number): void {
    this.active.get(requestId)?.gate.add(credits);
  }

  /** What each stack served since start, and what it serves now; stacks that served nothing yet are left out. */
  metrics(): StackMetrics[] {
    const now = new Map<string, { inFlight: number; waitingForCredit: number }>();
    for (const a of this.active.values()) {
      const m = now.get(a.stackId) ?? { inFlight: 0, waitingForCredit: 0 };
      m.inFlight++;
      if (a.gate.waiting) m.waitingForCredit++;
      now.set(a.stackId, m);
    }
    const stacks = new Set([...this.totals.keys(), ...now.keys()]);
    const zero = { requests: 0, failed: 0, promptTokens: 0, completionTokens: 0 };
    return [...stacks].map((stackId) => ({ stackId, ...zero, ...this.totals.get(stackId), inFlight: 0, waitingForCredit: 0, ...now.get(stackId) }));
  }

  private count(stackId: string, usage: { promptTokens: number; completionTokens: number }, failed: boolean): void {
    const t = this.totals.get(stackId) ?? { requests: 0, failed: 0, promptTokens: 0, completionTokens: 0 };
    t.requests++;
    if (failed) t.failed++;
    t.promptTokens += usage.promptTokens;
    t.completionTokens += usage.completionTokens;
    this.totals.set(stackId, t);
  }

  /** Aborts every request (the link is gone, so nobody is listening). */
  abortAll(reason: string): void {
    for (const a of this.active.values()) a.controller.abort(new MakinaError("canceled", reason));
  }

  private async serve(request: Extract<RelayToAgent, { type: "infer" }>, active: Active): Promise<void> {
    const { requestId, stackId } = request;
    const signal = active.controller.signal;
    try {
      const unserved = () => new MakinaError("runtime_unavailable", "The runtime for this stack is not running on the machine.", { retryAfterMs: 5000 });
      if (!this.host.runtime(stackId)) throw unserved();
      // No runtime fetches a URL a client chose: images named by URL are fetched here, under the agent's rules,
      // for two requests at a time at most (each holds up to 32 MB of images while they are put inline).
      const input = hasImageUrls(request.input) ? await this.inlining.run(() => inlineImages(request.input, this.images, signal)) : request.input;
      // Taken once the request is ready to run: a runtime replaced meanwhile (a redeploy) is not closed under it.
      const runtime = this.host.runtime(stackId);
      if (!runtime) throw unserved();
      // Read to its last event, canceled or not: a canceled or failed stream ends with what it used (`stopped`).
      for await (const ev of runtime.chat(input, { signal })) {
        if (ev.type === "stopped") return this.stopped(request, ev.error, ev.usage);
        if (ev.type === "end") {
          // An answer that ended as it was canceled is a canceled request all the same (the relay asked to stop).
          if (signal.aborted) return this.stopped(request, MakinaError.from(signal.reason), ev.usage);
          this.count(stackId, ev.usage, false);
          this.send({ type: "end", requestId, finishReason: ev.finishReason, usage: ev.usage });
          return;
        }
        // Canceled: what still comes has no reader (nor credit), up to the stream's last event.
        if (signal.aborted) continue;
        try {
          await active.gate.take(signal);
        } catch {
          continue;
        }
        this.send(ev.type === "text" ? { type: "text", requestId, text: ev.text } : { ...ev, requestId });
        this.chunksSent++;
      }
      throw new MakinaError("internal_error", "The runtime ended the request without its end.");
    } catch (err) {
      // Refused before the runtime began it: nothing was used.
      this.stopped(request, MakinaError.from(signal.aborted ? signal.reason : err), { promptTokens: 0, completionTokens: 0 });
    }
  }

  /** Tells the relay a request ended without its answer: canceled (its tokens still count toward the key's limits) or failed. */
  private stopped(request: Extract<RelayToAgent, { type: "infer" }>, error: MakinaError, usage: { promptTokens: number; completionTokens: number }): void {
    const { requestId, stackId } = request;
    if (error.code === "canceled") {
      this.log.info("request canceled", { requestId, stackId, reason: error.message, completionTokens: usage.completionTokens });
      this.canceled++;
      this.count(stackId, usage, false);
      this.send({ type: "end", requestId, finishReason: "canceled", usage });
      return;
    }
    if (error.code === "internal_error") this.log.error("inference failed", { requestId, stackId, err: error, cause: error.cause });
    this.count(stackId, usage, true);
    this.send({ type: "failed", requestId, error: toErrorReport(error), usage });
  }
}
