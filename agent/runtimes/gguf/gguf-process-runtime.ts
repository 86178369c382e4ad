import { MakinaError } from "../../../proto/index.js";
import type { ProcessSupervisor } from "../../supervisor/index.js";
import { stoppedBy, type ChatInput, type ChatOptions, type ModelRuntime, type RuntimeEvent } from "../model-runtime.js";
import { frameCost, fromErrorFrame, GGUF_WINDOW } from "./gguf-wire.js";
import { ProcessConnection } from "./process-connection.js";

/** Connections to the model process kept open for the next requests, at most (more at once are opened and closed as they end). */
const MAX_IDLE_CONNECTIONS = 16;
/** The longest a model process may take to unload or load its model again. */
const RESIDENCY_TIMEOUT_MS = 300_000;
/** How long a canceled request's process has to say what it used, before its connection is closed. */
const CANCEL_WAIT_MS = 2000;

/** Options of {@link GgufProcessRuntime}. */
export interface GgufProcessRuntimeOptions {
  /** The model process's socket. */
  socketPath: string;
  /** Tokens of context each request gets. */
  contextSize: number;
  supervisor: ProcessSupervisor;
  /** Called once after the runtime closed (to give back what it held). */
  onClose?: () => void;
  /** The threads of the machine's budget: given back while the model sleeps, taken again (as many as are free) when it wakes. */
  threads?: { release(): void; take(): number };
  /** An embedding model, by the file's header. */
  embeddingModel?: boolean;
  /** What the process said its loaded model holds in memory, bytes (its first health answer). */
  memoryBytes?: number;
}

/**
 * A GGUF model served by its own supervised process (gguf-server.ts), reached
 * over a local socket. Each request has a connection of its own while it runs,
 * taken from those kept open (see {@link ProcessConnection}), and given back once
 * its end or error came; the process may send {@link GGUF_WINDOW} bytes of frames
 * ahead, and as many more as the caller takes (returned a quarter of the window at
 * a time), so a caller that stops pulling stops the decoder. Leaving the loop
 * early or aborting the signal closes the request's connection, which cancels it.
 */
export class GgufProcessRuntime implements ModelRuntime {
  readonly contextSize: number;
  readonly endpoint: string;
  readonly embeddingModel: boolean;
  /** What the process last said its model holds in memory (0 while it sleeps), bytes. */
  private said: number;
  private closed = false;
  /** Set as `close` begins: no connection is kept from then on. */
  private closing = false;
  /** Open connections with no request, the most recently used last. */
  private readonly idle: ProcessConnection[] = [];

  get pid(): number | undefined {
    return this.o.supervisor.pid;
  }

  /** What the process last said its model holds in memory (0 while it sleeps), bytes: what the budget counts. */
  get memoryBytes(): number {
    return this.said;
  }

  /** The process said, answering a health probe, what its model holds now. */
  noteMemory(bytes: number): void {
    this.said = bytes;
  }

  constructor(private readonly o: GgufProcessRuntimeOptions) {
    this.contextSize = o.contextSize;
    this.endpoint = `unix:${o.socketPath}`;
    this.embeddingModel = o.embeddingModel ?? false;
    this.said = o.memoryBytes ?? 0;
  }

  async *chat(input: ChatInput, options: ChatOptions = {}): AsyncGenerator<RuntimeEvent> {
    if (this.o.supervisor.state !== "ready") {
      throw new MakinaError("runtime_unavailable", `The runtime is ${this.o.supervisor.state}.`, { retryAfterMs: 5000 });
    }
    const { signal } = options;
    const connection = await this.connection(signal);
    // Canceled: the process is asked to stop and say what the request used (its `stopped` frame), for a moment;
    // a process that does not answer by then has its connection closed.
    let unanswered: NodeJS.Timeout | undefined;
    const onAbort = () => {
      connection.send({ type: "cancel" });
      unanswered = setTimeout(() => connection.destroy(), CANCEL_WAIT_MS);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    // Given back once the request is over on the process's side too (its end, error or stopped came); closed otherwise.
    let over = false;
    // The pieces that came: what a request whose process went away is charged, at least (one token each).
    let pieces = 0;
    try {
      connection.send({ type: "chat", input, window: GGUF_WINDOW });
      // Bytes taken and not yet credited back: returned a quarter of the window at a time, not a message per frame.
      let owed = 0;
      for (let frame = await connection.next(); frame; frame = await connection.next()) {
        if (frame.type === "health" || frame.type === "slept" || frame.type === "awake") continue;
        if (frame.type === "end" || frame.type === "error" || frame.type === "stopped") {
          over = true;
          this.giveBack(connection, signal, onAbort);
          const usage = { promptTokens: frame.promptTokens, completionTokens: frame.completionTokens, ...(frame.type === "end" && frame.cachedTokens ? { cachedTokens: frame.cachedTokens } : {}) };
          if (frame.type === "end") yield { type: "end", finishReason: frame.finishReason, usage };
          else yield stoppedBy(frame.type === "error" ? fromErrorFrame(frame) : new MakinaError("canceled", "The request was canceled."), usage, signal);
          return;
        }
        pieces++;
        // Canceled: what still comes before the `stopped` frame has no reader.
        if (signal?.aborted) continue;
        if (frame.type === "text") yield { type: "text", text: frame.text };
        else if (frame.type === "embedding") yield { type: "embedding", index: frame.index, values: frame.values };
        else if (frame.type === "score") yield { type: "score", index: frame.index, score: frame.score };
        else yield { type: "toolCall", index: frame.index, id: frame.id, name: frame.name, arguments: frame.arguments };
        owed += frameCost(frame);
        if (owed >= GGUF_WINDOW / 4) {
          connection.send({ type: "credit", n: owed });
          owed = 0;
        }
      }
      throw new MakinaError("runtime_unavailable", "The GGUF model process ended the request before its answer was complete.", { retryAfterMs: 1000 });
    } catch (err) {
      // The process went away mid-request (or did not answer a cancel): charged the pieces that came, its prompt unknown.
      yield stoppedBy(err, { promptTokens: 0, completionTokens: pieces }, signal);
    } finally {
      clearTimeout(unanswered);
      if (!over) {
        signal?.removeEventListener("abort", onAbort);
        connection.destroy();
      }
    }
  }

  /** An idle open connection to the model process, or a new one. */
  private async connection(signal: AbortSignal | undefined): Promise<ProcessConnection> {
    if (signal?.aborted) throw MakinaError.from(signal.reason);
    for (let c = this.idle.pop(); c; c = this.idle.pop()) {
      if (c.idle) return c;
      c.destroy();
    }
    return ProcessConnection.open(this.o.socketPath, signal);
  }

  /** Keeps a connection whose request is over for the next request (called once per request). */
  private giveBack(connection: ProcessConnection, signal: AbortSignal | undefined, onAbort: () => void): void {
    signal?.removeEventListener("abort", onAbort);
    if (this.closing || !connection.idle || this.idle.length >= MAX_IDLE_CONNECTIONS) connection.destroy();
    else this.idle.push(connection);
  }

  /**
   * Unloads the model and its contexts inside the process, which stays (so that its next load costs
   * node-llama-cpp's own, not a process's start); its threads go back to the machine's budget.
   */
  readonly sleep = async (): Promise<void> => {
    await this.residency({ type: "sleep" }, "slept");
    this.said = 0;
    this.o.threads?.release();
  };

  /** Loads the model again in its process, with the threads of the budget free now. */
  readonly wake = async (): Promise<void> => {
    const threads = this.o.threads?.take() ?? 1;
    try {
      await this.residency({ type: "wake", threads }, "awake");
    } catch (err) {
      this.o.threads?.release();
      throw err;
    }
  };

  /** Sends a sleep or wake frame on a connection of its own and waits for its answer (within the supervisor's patience for a start). */
  private async residency(frame: { type: "sleep" } | { type: "wake"; threads: number }, answer: "slept" | "awake"): Promise<void> {
    const deadline = AbortSignal.timeout(RESIDENCY_TIMEOUT_MS);
    await this.processReady(deadline);
    const connection = await ProcessConnection.open(this.o.socketPath, deadline);
    const onAbort = () => connection.destroy();
    deadline.addEventListener("abort", onAbort, { once: true });
    try {
      connection.send(frame);
      for (let f = await connection.next(); f; f = await connection.next()) {
        if (f.type === "awake") this.said = f.memoryBytes;
        if (f.type === answer) return;
        if (f.type === "error") throw fromErrorFrame(f);
      }
      throw new MakinaError("runtime_unavailable", `The GGUF model process did not say it ${answer === "slept" ? "unloaded" : "loaded"} the model.`, { retryAfterMs: 5000 });
    } finally {
      deadline.removeEventListener("abort", onAbort);
      connection.destroy();
    }
  }

  /** Waits until the model process serves (restarted after a crash, it may still be starting), within `deadline`. */
  private async processReady(deadline: AbortSignal): Promise<void> {
    if (this.o.supervisor.state === "ready") return;
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => reject(MakinaError.from(deadline.reason));
      deadline.addEventListener("abort", onAbort, { once: true });
      this.o.supervisor
        .start()
        .then(resolve, reject)
        .finally(() => deadline.removeEventListener("abort", onAbort));
    });
  }

  async close(): Promise<void> {
    this.closing = true;
    for (const c of this.idle.splice(0)) c.destroy();
    await this.o.supervisor.stop();
    if (!this.closed) this.o.onClose?.();
    this.closed = true;
  }
}
