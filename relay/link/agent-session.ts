import { DEFAULT_INITIAL_CREDIT, MAX_EMBED_NUMBERS, MakinaError } from "../../proto/index.js";
import type { AgentToRelay, ChatInput, DeployStep, LinkEnd, Logger, RelayToAgent, StepProgress, StepResult, TokenEvent, Usage } from "../../proto/index.js";
import { fromAgentError } from "./agent-errors.js";
import type { SessionReports } from "./session-reports.js";
import { clampUsage, seenFor, type SeenAnswer } from "./clamp-usage.js";
import { assertEncodable } from "./encodable-input.js";
import { StackReadiness, type Room } from "./stack-readiness.js";
import { PendingInference } from "./pending-inference.js";

/** Options of {@link AgentSession.infer}. */
export interface InferOptions {
  signal?: AbortSignal;
  /** Fail with 503 `runtime_unavailable` when no first token arrives in time. @default 120000 */
  firstTokenTimeoutMs?: number;
  /**
   * Called exactly once with the tokens the request really used: when it ends,
   * also after the consumer left early (the agent reports what it generated
   * before it stopped), or with `null` when the link was lost and nobody knows.
   */
  onUsage?: (usage: Usage | null) => void;
  /**
   * Runs of the model the request takes (an orchestrator's steps, which the relay does not see): its usage may
   * reach that many times what one run could. @default 1
   */
  steps?: number;
}

/** Longest answer one request may bring, in characters (what the relay may have to hold of it). */
const MAX_ANSWER_CHARS = 8 * 1024 * 1024;
/** Longest runtime error a machine's report keeps. */
const MAX_REASON_CHARS = 2000;

/** A request the relay is tracking on this link. */
interface Tracked {
  stackId: string;
  /** What the relay itself saw, to check the usage the agent reports against. */
  seen: SeenAnswer;
  pending: PendingInference;
  onUsage: ((usage: Usage | null) => void) | undefined;
  /** The consumer left; only the final usage is still awaited. */
  abandoned: boolean;
  timer?: NodeJS.Timeout;
}

/** How long an abandoned request waits for its final usage before it is charged at its estimate. */
const USAGE_WAIT_MS = 30_000;

interface PendingCommand {
  resolve(result: StepResult): void;
  reject(err: MakinaError): void;
  onProgress?: (p: StepProgress) => void;
}

/** Link states: `open` while the agent is connected, then `closed` (final). */
export type SessionState = "open" | "closed";

/**
 * One connected agent: multiplexes inference requests and commands over its
 * single link, and fails everything pending when the link goes away.
 */
export class AgentSession {
  private readonly inferences = new Map<string, Tracked>();
  /** Request and command ids are this link's own: a counter is enough (and cheaper than a UUID per request). */
  private nextId = 0;
  private readonly commands = new Map<string, PendingCommand>();
  private readonly readiness = new StackReadiness();
  /** Stacks whose runtimes this machine serves now: ready, or on demand (loaded by the next request). */
  readonly readyStacks = this.readiness.ready;
  /** Stacks the relay sent deploy steps for on this link: the machine's, whatever the store said when it linked. */
  private readonly givenStacks = new Set<string>();
  state: SessionState = "open";
  /** Unix ms of the last message from the agent. */
  lastSeenAt = Date.now();

  constructor(
    readonly machineId: string,
    readonly orgId: string,
    private readonly agent: LinkEnd<RelayToAgent>,
    private readonly log: Logger,
    /** What the agent reports on its own: hardware changes and runtime state changes. */
    private readonly reports: SessionReports = {},
    private readonly window = DEFAULT_INITIAL_CREDIT,
  ) {}

  /**
   * Fails every request whose runtime went quiet after its first token: the relay waited `idleMs` for its
   * next event (a client that reads slowly holds credit back, and is not counted: the relay was not waiting).
   * Called now and then by the link's watchdog.
   */
  failStalled(idleMs: number, now = Date.now()): void {
    for (const t of this.inferences.values()) {
      const p = t.pending;
      if (!t.abandoned && p.started && p.waitingSince !== 0 && now - p.waitingSince > idleMs) {
        p.fail(new MakinaError("stream_incomplete", `The runtime stopped producing for ${Math.round(idleMs / 1000)} s in the middle of its answer.`));
      }
    }
  }

  /** The relay stores a stack's runtime state itself now (a deployment's end): what the agent said before is dropped. */
  forgetRuntimeState(stackId: string): void {
    this.reports.forgetRuntimeState?.(stackId);
  }

  /** When (`performance.now()`) the machine last said a stack's runtime is ready: the end of its last load. */
  readySince(stackId: string): number | undefined {
    return this.readiness.readySince(stackId);
  }

  /** Whether a stack's model is loaded here now (not an on-demand stack unloaded, unloading, or loading from there). */
  loaded(stackId: string): boolean {
    return this.readiness.loaded(stackId);
  }

  /** What the machine has free for one more model, as it last said: a place under `--max-loaded`, bytes of its budget. */
  roomToLoad(): Room {
    return this.readiness.roomToLoad();
  }

  /** Inference requests in flight on this machine (for least-loaded routing). */
  get inFlight(): number {
    let n = 0;
    for (const t of this.inferences.values()) if (!t.abandoned) n++;
    return n;
  }

  /** Inference requests in flight on this machine for one stack (replicas on one machine told apart). */
  inFlightFor(stackId: string): number {
    let n = 0;
    for (const t of this.inferences.values()) if (!t.abandoned && t.stackId === stackId) n++;
    return n;
  }

  send(message: RelayToAgent): void {
    if (this.state === "open") this.agent.send(message);
  }

  /** True while the agent does not take the relay's messages as fast as they are written (its link is not draining). */
  get congested(): boolean {
    return this.agent.congested?.() ?? false;
  }

  /** Dispatches one message from the agent. */
  handle(message: AgentToRelay): void {
    this.lastSeenAt = Date.now();
    switch (message.type) {
      case "text":
      case "toolCall":
      case "embedding":
      case "score": {
        const tracked = this.inferences.get(message.requestId);
        if (!tracked) return;
        tracked.seen.chunks++;
        // A vector's numbers count as 4 characters each against the limit: MAX_EMBED_NUMBERS of them fill it.
        // (A document's score counts as a number of a vector: MAX_RERANK_DOCUMENTS of them are far from the limit.)
        tracked.seen.chars += message.type === "text" ? message.text.length : message.type === "toolCall" ? message.arguments.length + message.name.length : (message.type === "score" ? 1 : message.values.length) * (MAX_ANSWER_CHARS / MAX_EMBED_NUMBERS);
        // Every token of an answer brings at least one byte of its text (a chunk may carry many tokens).
        if (message.type === "text" || message.type === "toolCall") tracked.seen.bytes += Buffer.byteLength(message.type === "text" ? message.text : message.arguments) + (message.type === "toolCall" ? message.name.length : 0);
        if (tracked.seen.chars > MAX_ANSWER_CHARS) {
          tracked.pending.fail(
            message.type === "embedding"
              ? new MakinaError("request_too_large", `The vectors of this request hold more than the relay's limit of ${MAX_EMBED_NUMBERS} numbers: send fewer inputs in each request.`, { param: "input" })
              : new MakinaError("stream_incomplete", `The answer grew past the relay's limit of ${MAX_ANSWER_CHARS} characters.`),
          );
          return;
        }
        // The message is the token event itself: it is queued as it came.
        tracked.pending.push(message);
        return;
      }
      case "end":
      case "failed": {
        const tracked = this.inferences.get(message.requestId);
        if (!tracked) return;
        const usage = clampUsage(message.usage, tracked.seen);
        settle(tracked, usage);
        if (tracked.abandoned) {
          this.inferences.delete(message.requestId);
          return;
        }
        if (message.type === "end") tracked.pending.push(usage === message.usage ? message : { ...message, usage });
        else tracked.pending.fail(fromAgentError(message.error, "inference"));
        return;
      }
      case "progress":
        this.commands.get(message.commandId)?.onProgress?.(message.progress);
        return;
      case "result":
      case "stepFailed": {
        const pending = this.commands.get(message.commandId);
        if (!pending) return;
        this.commands.delete(message.commandId);
        if (message.type === "stepFailed") pending.reject(fromAgentError(message.error, "step"));
        else pending.resolve(message.result);
        return;
      }
      case "hardware":
        this.reports.onHardware?.(message.hardware);
        return;
      case "runtimeState": {
        const { stackId, state, error, reason, loadMs, contextSize } = message;
        if (!this.owns(stackId)) {
          this.reports.onForeignStack?.(stackId);
          return;
        }
        this.readiness.said(stackId, state);
        // A load's time is at most a day, whatever a machine says.
        if (loadMs !== undefined && (state === "ready" || state === "unloaded")) this.reports.onResidency?.(stackId, { kind: "load", loaded: state === "ready", seconds: Math.min(loadMs, 86_400_000) / 1000 });
        if (reason !== undefined && state === "unloading") this.reports.onResidency?.(stackId, { kind: "unload", reason });
        // The reason is shown in lists and stored: cut to a size a person reads.
        this.reports.onRuntimeState?.(stackId, state, error ? error.slice(0, MAX_REASON_CHARS) : null, contextSize);
        return;
      }
      case "inventory":
        this.readiness.sawMemory(message.inventory.memory);
        this.reports.onInventory?.(message.inventory);
        return;
      case "metrics":
        this.reports.onMetrics?.(message.stacks);
        return;
      case "load":
        this.reports.onLoad?.(message.load);
        return;
      case "heartbeat":
      case "hello":
        return;
    }
  }

  /**
   * Runs a chat request on the agent, yielding chunks and then a final `done`.
   * Each chunk's credit is returned to the agent only when the caller asks for the
   * next event, so a slow consumer slows only its own request. Leaving the loop
   * early, or aborting `signal`, cancels the request on the agent.
   */
  async *infer(stackId: string, input: ChatInput, options: InferOptions = {}): AsyncGenerator<TokenEvent> {
    if (this.state !== "open") throw offline();
    assertEncodable(input);
    const requestId = `r${++this.nextId}`;
    const pending = new PendingInference(this.window);
    const seen = seenFor(input, options.steps ?? 1);
    const tracked: Tracked = { stackId, pending, onUsage: options.onUsage, abandoned: false, seen };
    this.inferences.set(requestId, tracked);
    const { signal } = options;
    const onAbort = () => pending.fail(MakinaError.from(signal?.reason ?? new DOMException("aborted", "AbortError")));
    signal?.addEventListener("abort", onAbort, { once: true });
    const firstTokenTimer = setTimeout(() => {
      if (!pending.started) {
        pending.fail(new MakinaError("runtime_unavailable", "The runtime did not start answering in time.", { retryAfterMs: 5000 }));
      }
    }, options.firstTokenTimeoutMs ?? 120_000);
    let finished = false;
    try {
      if (signal?.aborted) onAbort();
      this.send({ type: "infer", requestId, stackId, input, credit: this.window });
      let unacknowledged = 0;
      for (;;) {
        const event = await pending.next();
        if (event.type === "end") {
          finished = true;
          yield event;
          return;
        }
        yield event;
        if (++unacknowledged >= Math.max(1, this.window >> 1)) {
          this.send({ type: "credit", requestId, credits: unacknowledged });
          unacknowledged = 0;
        }
      }
    } finally {
      clearTimeout(firstTokenTimer);
      signal?.removeEventListener("abort", onAbort);
      if (finished || this.state !== "open" || !tracked.onUsage) {
        this.inferences.delete(requestId);
        settle(tracked, null);
      } else {
        // Keep listening for the final usage of a request the consumer left.
        tracked.abandoned = true;
        tracked.timer = setTimeout(() => {
          this.inferences.delete(requestId);
          settle(tracked, null);
        }, USAGE_WAIT_MS);
      }
      if (!finished) this.send({ type: "cancel", requestId, reason: "canceled by the relay" });
    }
  }

  /** Whether the machine's credentials still hold (checked in the database; true when the link cannot tell). */
  credentialsHold(): Promise<boolean> {
    return this.reports.credentialsHold?.() ?? Promise.resolve(true);
  }

  /** Whether the stack is this machine's: given to it on this link, or (per `ownsStack`) before. */
  owns(stackId: string): boolean {
    return this.givenStacks.has(stackId) || (this.reports.ownsStack?.(stackId) ?? true);
  }

  /**
   * Sends one deployment step and waits for its result. With `idleTimeoutMs`, a step the machine reports
   * nothing of (no progress, no result) for that long fails with `timeout`, so a stuck step cannot hold
   * the stack's later deployments.
   */
  runCommand(
    stackId: string,
    step: DeployStep,
    options: { onProgress?: (p: StepProgress) => void; signal?: AbortSignal; idleTimeoutMs?: number } = {},
  ): Promise<StepResult> {
    if (this.state !== "open") return Promise.reject(offline());
    // A look at a model file belongs to no stack.
    if (stackId) this.givenStacks.add(stackId);
    const commandId = `c${++this.nextId}`;
    return new Promise<StepResult>((resolve, reject) => {
      let idle: NodeJS.Timeout | undefined;
      const done = () => {
        clearTimeout(idle);
        options.signal?.removeEventListener("abort", onAbort);
      };
      const fail = (err: MakinaError) => {
        this.commands.delete(commandId);
        done();
        reject(err);
      };
      const onAbort = () => {
        // The machine stops the step too: nothing it does for it after this counts.
        this.send({ type: "cancelCommand", commandId, reason: "the relay no longer waits for this step" });
        fail(MakinaError.from(options.signal?.reason));
      };
      const arm = () => {
        if (options.idleTimeoutMs === undefined) return;
        clearTimeout(idle);
        idle = setTimeout(() => {
          const ms = options.idleTimeoutMs!;
          const wait = ms >= 60_000 ? `${Math.round(ms / 60_000)} min` : ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`;
          this.send({ type: "cancelCommand", commandId, reason: `no word of the step for ${wait}` });
          fail(new MakinaError("timeout", `The machine reported nothing of the ${step.kind} step for ${wait}; it was given up.`));
        }, options.idleTimeoutMs);
      };
      options.signal?.addEventListener("abort", onAbort, { once: true });
      arm();
      this.commands.set(commandId, {
        resolve: (r) => {
          done();
          resolve(r);
        },
        reject: (e) => {
          done();
          reject(e);
        },
        onProgress: (p) => {
          arm();
          options.onProgress?.(p);
        },
      });
      this.send({ type: "command", commandId, stackId, step });
    });
  }

  /** Marks the link gone: every pending request and command fails with `machine_offline`. Idempotent. */
  close(): void {
    if (this.state === "closed") return;
    this.state = "closed";
    const err = offline();
    for (const t of this.inferences.values()) {
      t.pending.fail(err);
      if (t.abandoned) settle(t, null);
    }
    for (const c of this.commands.values()) c.reject(err);
    this.commands.clear();
    this.readiness.clear();
    this.log.info("link closed", { inFlight: this.inferences.size });
  }

  /** Ends the link from the relay's side (a newer link replaces it, the machine was revoked, shutdown). */
  end(reason = "the relay ended the link"): void {
    this.close();
    this.agent.close(reason);
  }
}

/** Delivers a request's usage once; later calls do nothing. */
function settle(tracked: Tracked, usage: Usage | null): void {
  clearTimeout(tracked.timer);
  const cb = tracked.onUsage;
  tracked.onUsage = undefined;
  cb?.(usage);
}

function offline(): MakinaError {
  return new MakinaError("machine_offline", "The machine serving this model is offline.", { retryAfterMs: 5000 });
}
