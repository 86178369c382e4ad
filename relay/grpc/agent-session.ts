import { randomUUID } from "node:crypto";
import type { ServerDuplexStream } from "@grpc/grpc-js";
import {
  DEFAULT_INITIAL_CREDIT,
  MakinaError,
  fromLinkError,
  type AgentMessage,
  type Command,
  type CommandProgress,
  type CommandResult,
  type HardwareReport,
  type InferenceRequest,
  type Inventory,
  type Logger,
  type RelayMessage,
} from "../../proto/index.js";
import { PendingInference, type InferenceEvent } from "./pending-inference.js";

/** A chat request as the gateway hands it to a machine: the wire request without the link's own fields. */
export type InferenceCall = Omit<InferenceRequest, "requestId" | "initialCredit">;

/** Tokens a request used, as the agent counted them. */
export interface InferenceUsage {
  promptTokens: number;
  completionTokens: number;
}

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
  onUsage?: (usage: InferenceUsage | null) => void;
}

/** A request the relay is tracking on this link. */
interface Tracked {
  pending: PendingInference;
  onUsage: ((usage: InferenceUsage | null) => void) | undefined;
  /** The consumer left; only the final usage is still awaited. */
  abandoned: boolean;
  timer?: NodeJS.Timeout;
}

/** How long an abandoned request waits for its final usage before it is charged at its estimate. */
const USAGE_WAIT_MS = 30_000;

type CommandStep = NonNullable<Command["step"]>;

interface PendingCommand {
  resolve(result: CommandResult): void;
  reject(err: MakinaError): void;
  onProgress?: (p: CommandProgress) => void;
}

/**
 * A message whose numbers do not fit the link's types cannot be encoded, and grpc-js ends the whole
 * link when a write fails to encode: such a request is refused alone, before it is sent.
 */
function assertEncodable(call: InferenceCall): void {
  const uint32 = (v: number, param: string) => {
    if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new MakinaError("invalid_value", `'${param}' is out of range: ${v}.`, { param });
  };
  uint32(call.maxTokens, "max_tokens");
  if (call.seed !== undefined) uint32(call.seed, "seed");
}

/** What an agent reports on its own over the link. */
export interface SessionReports {
  onHardware?: (hardware: HardwareReport) => void;
  onRuntimeStatus?: (stackId: string, state: string, error: string | null) => void;
  onInventory?: (inventory: Inventory) => void;
}

/** Link states: `open` while the agent is connected, then `closed` (final). */
export type SessionState = "open" | "closed";

/**
 * One connected agent: multiplexes inference requests and commands over its
 * single link, and fails everything pending when the link goes away.
 */
export class AgentSession {
  private readonly inferences = new Map<string, Tracked>();
  private readonly commands = new Map<string, PendingCommand>();
  /** Stacks whose endpoint the agent has configured on this link. */
  readonly readyStacks = new Set<string>();
  state: SessionState = "open";
  /** Unix ms of the last message from the agent. */
  lastSeenAt = Date.now();

  constructor(
    readonly machineId: string,
    readonly orgId: string,
    private readonly call: ServerDuplexStream<AgentMessage, RelayMessage>,
    private readonly log: Logger,
    /** What the agent reports on its own: hardware changes and runtime state changes. */
    private readonly reports: SessionReports = {},
    private readonly window = DEFAULT_INITIAL_CREDIT,
  ) {}

  /** Inference requests in flight on this machine (for least-loaded routing). */
  get inFlight(): number {
    let n = 0;
    for (const t of this.inferences.values()) if (!t.abandoned) n++;
    return n;
  }

  send(message: RelayMessage): void {
    if (this.state === "open") this.call.write(message);
  }

  /** Dispatches one message from the agent. */
  handle(message: AgentMessage): void {
    this.lastSeenAt = Date.now();
    const body = message.body;
    switch (body?.$case) {
      case "inferenceChunk":
        this.inferences.get(body.value.requestId)?.pending.push({ type: "chunk", text: body.value.text });
        return;
      case "inferenceEnd": {
        const tracked = this.inferences.get(body.value.requestId);
        if (!tracked) return;
        const usage = { promptTokens: body.value.usage?.promptTokens ?? 0, completionTokens: body.value.usage?.completionTokens ?? 0 };
        settle(tracked, usage);
        if (tracked.abandoned) {
          this.inferences.delete(body.value.requestId);
          return;
        }
        const outcome = body.value.outcome;
        if (outcome?.$case === "done") {
          tracked.pending.push({ type: "done", finishReason: outcome.value.finishReason, ...usage });
        } else {
          tracked.pending.fail(outcome?.$case === "error" ? fromLinkError(outcome.value) : new MakinaError("internal_error", "The agent ended the request without an outcome."));
        }
        return;
      }
      case "commandProgress":
        this.commands.get(body.value.commandId)?.onProgress?.(body.value);
        return;
      case "commandResult": {
        const pending = this.commands.get(body.value.commandId);
        if (!pending) return;
        this.commands.delete(body.value.commandId);
        if (body.value.error) pending.reject(fromLinkError(body.value.error));
        else pending.resolve(body.value);
        return;
      }
      case "hardwareUpdate":
        this.reports.onHardware?.(body.value);
        return;
      case "runtimeStatus": {
        const { stackId, state, error } = body.value;
        // A runtime that is restarting or failed takes no requests: they get 503 runtime_unavailable.
        if (state === "ready") this.readyStacks.add(stackId);
        else this.readyStacks.delete(stackId);
        this.reports.onRuntimeStatus?.(stackId, state, error || null);
        return;
      }
      case "inventory":
        this.reports.onInventory?.(body.value);
        return;
      case "heartbeat":
      case "hello":
      case undefined:
        return;
    }
  }

  /**
   * Runs a chat request on the agent, yielding chunks and then a final `done`.
   * Each chunk's credit is returned to the agent only when the caller asks for the
   * next event, so a slow consumer slows only its own request. Leaving the loop
   * early, or aborting `signal`, cancels the request on the agent.
   */
  async *infer(call: InferenceCall, options: InferOptions = {}): AsyncGenerator<InferenceEvent> {
    if (this.state !== "open") throw offline();
    assertEncodable(call);
    const requestId = randomUUID();
    const pending = new PendingInference(this.window);
    const tracked: Tracked = { pending, onUsage: options.onUsage, abandoned: false };
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
      this.send({
        body: { $case: "inferenceRequest", value: { ...call, requestId, initialCredit: this.window } },
      });
      let unacknowledged = 0;
      for (;;) {
        const event = await pending.next();
        if (event.type === "done") {
          finished = true;
          yield event;
          return;
        }
        yield event;
        if (++unacknowledged >= Math.max(1, this.window >> 1)) {
          this.send({ body: { $case: "inferenceCredit", value: { requestId, credits: unacknowledged } } });
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
      if (!finished) this.send({ body: { $case: "inferenceCancel", value: { requestId, reason: "canceled by the relay" } } });
    }
  }

  /** Sends one deployment step and waits for its result. */
  runCommand(stackId: string, step: CommandStep, options: { onProgress?: (p: CommandProgress) => void; signal?: AbortSignal } = {}): Promise<CommandResult> {
    if (this.state !== "open") return Promise.reject(offline());
    const commandId = randomUUID();
    return new Promise<CommandResult>((resolve, reject) => {
      const onAbort = () => {
        this.commands.delete(commandId);
        reject(MakinaError.from(options.signal?.reason));
      };
      options.signal?.addEventListener("abort", onAbort, { once: true });
      this.commands.set(commandId, {
        resolve: (r) => {
          options.signal?.removeEventListener("abort", onAbort);
          resolve(r);
        },
        reject: (e) => {
          options.signal?.removeEventListener("abort", onAbort);
          reject(e);
        },
        onProgress: options.onProgress,
      });
      this.send({ body: { $case: "command", value: { commandId, stackId, step } } });
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
    this.readyStacks.clear();
    this.log.info("link closed", { inFlight: this.inferences.size });
  }

  /** Ends the gRPC call (used when a newer link replaces this one, or at shutdown). */
  end(): void {
    this.close();
    try {
      this.call.end();
    } catch {
      // The call may already be finished; ending it again is harmless.
    }
  }
}

/** Delivers a request's usage once; later calls do nothing. */
function settle(tracked: Tracked, usage: InferenceUsage | null): void {
  clearTimeout(tracked.timer);
  const cb = tracked.onUsage;
  tracked.onUsage = undefined;
  cb?.(usage);
}

function offline(): MakinaError {
  return new MakinaError("machine_offline", "The machine serving this model is offline.", { retryAfterMs: 5000 });
}
