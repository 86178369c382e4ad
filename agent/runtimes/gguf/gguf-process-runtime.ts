import { MakinaError } from "../../../proto/index.js";
import type { ProcessSupervisor } from "../../supervisor/index.js";
import type { ChatInput, ChatOptions, ModelRuntime, RuntimeEvent } from "../model-runtime.js";
import { frameCost, fromErrorFrame, GGUF_WINDOW } from "./gguf-wire.js";
import { ProcessConnection } from "./process-connection.js";

/** Connections to the model process kept open for the next requests, at most (more at once are opened and closed as they end). */
const MAX_IDLE_CONNECTIONS = 16;

/** Options of {@link GgufProcessRuntime}. */
export interface GgufProcessRuntimeOptions {
  /** The model process's socket. */
  socketPath: string;
  /** Tokens of context each request gets. */
  contextSize: number;
  supervisor: ProcessSupervisor;
  /** Called once after the runtime closed (to give back what it held). */
  onClose?: () => void;
  /** An embedding model, by the file's header. */
  embeddingModel?: boolean;
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
  private closed = false;
  /** Set as `close` begins: no connection is kept from then on. */
  private closing = false;
  /** Open connections with no request, the most recently used last. */
  private readonly idle: ProcessConnection[] = [];

  get pid(): number | undefined {
    return this.o.supervisor.pid;
  }

  constructor(private readonly o: GgufProcessRuntimeOptions) {
    this.contextSize = o.contextSize;
    this.endpoint = `unix:${o.socketPath}`;
    this.embeddingModel = o.embeddingModel ?? false;
  }

  async *chat(input: ChatInput, options: ChatOptions = {}): AsyncGenerator<RuntimeEvent> {
    if (this.o.supervisor.state !== "ready") {
      throw new MakinaError("runtime_unavailable", `The runtime is ${this.o.supervisor.state}.`, { retryAfterMs: 5000 });
    }
    const { signal } = options;
    const connection = await this.connection(signal);
    const onAbort = () => connection.destroy();
    signal?.addEventListener("abort", onAbort, { once: true });
    // Given back once the request is over on the process's side too (its end or error came); closed otherwise.
    let over = false;
    let givenBack = false;
    try {
      connection.send({ type: "chat", input, window: GGUF_WINDOW });
      // Bytes taken and not yet credited back: returned a quarter of the window at a time, not a message per frame.
      let owed = 0;
      for (let frame = await connection.next(); frame; frame = await connection.next()) {
        if (frame.type === "error") {
          over = true;
          throw fromErrorFrame(frame);
        }
        if (frame.type === "health") continue;
        if (options.usage) Object.assign(options.usage, { promptTokens: frame.promptTokens, completionTokens: frame.completionTokens });
        if (frame.type === "end") {
          over = givenBack = true;
          this.giveBack(connection, signal, onAbort);
          yield { type: "end", finishReason: frame.finishReason, usage: { promptTokens: frame.promptTokens, completionTokens: frame.completionTokens } };
          return;
        }
        if (frame.type === "text") yield { type: "text", text: frame.text };
        else if (frame.type === "embedding") yield { type: "embedding", index: frame.index, values: frame.values };
        else yield { type: "toolCall", index: frame.index, id: frame.id, name: frame.name, arguments: frame.arguments };
        owed += frameCost(frame);
        if (owed >= GGUF_WINDOW / 4) {
          connection.send({ type: "credit", n: owed });
          owed = 0;
        }
      }
      throw new MakinaError("runtime_unavailable", "The GGUF model process ended the request before its answer was complete.", { retryAfterMs: 1000 });
    } catch (err) {
      if (signal?.aborted) throw MakinaError.from(signal.reason);
      throw MakinaError.from(err);
    } finally {
      if (over && !givenBack) this.giveBack(connection, signal, onAbort);
      else if (!over) {
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

  async close(): Promise<void> {
    this.closing = true;
    for (const c of this.idle.splice(0)) c.destroy();
    await this.o.supervisor.stop();
    if (!this.closed) this.o.onClose?.();
    this.closed = true;
  }
}
