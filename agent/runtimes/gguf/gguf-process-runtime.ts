import { MakinaError } from "../../../proto/index.js";
import type { ProcessSupervisor } from "../../supervisor/index.js";
import type { ChatInput, ChatOptions, ModelRuntime, RuntimeEvent } from "../model-runtime.js";
import { connectToProcess, frameCost, fromErrorFrame, GGUF_WINDOW, readFrames, writeFrame, type ProcessFrame } from "./gguf-wire.js";

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
 * over a local socket. Each request is one connection; the process may send
 * {@link GGUF_WINDOW} bytes of frames ahead, and as many more as the caller takes
 * (returned a quarter of the window at a time), so a caller that stops pulling
 * stops the decoder. Closing the connection
 * (leaving the loop, or aborting the signal) cancels the request.
 */
export class GgufProcessRuntime implements ModelRuntime {
  readonly contextSize: number;
  readonly endpoint: string;
  readonly embeddingModel: boolean;
  private closed = false;

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
    const socket = await connectToProcess(this.o.socketPath, signal);
    const onAbort = () => socket.destroy();
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      writeFrame(socket, { type: "chat", input, window: GGUF_WINDOW });
      // Bytes taken and not yet credited back: returned a quarter of the window at a time, not a message per frame.
      let owed = 0;
      for await (const frame of readFrames<ProcessFrame>(socket)) {
        if (frame.type === "error") throw fromErrorFrame(frame);
        if (frame.type === "health") continue;
        if (options.usage) Object.assign(options.usage, { promptTokens: frame.promptTokens, completionTokens: frame.completionTokens });
        if (frame.type === "end") {
          yield { type: "end", finishReason: frame.finishReason, usage: { promptTokens: frame.promptTokens, completionTokens: frame.completionTokens } };
          return;
        }
        if (frame.type === "text") yield { type: "text", text: frame.text };
        else if (frame.type === "embedding") yield { type: "embedding", index: frame.index, values: frame.values };
        else yield { type: "toolCall", index: frame.index, id: frame.id, name: frame.name, arguments: frame.arguments };
        owed += frameCost(frame);
        if (owed >= GGUF_WINDOW / 4) {
          writeFrame(socket, { type: "credit", n: owed });
          owed = 0;
        }
      }
      throw new MakinaError("runtime_unavailable", "The GGUF model process ended the request before its answer was complete.", { retryAfterMs: 1000 });
    } catch (err) {
      if (signal?.aborted) throw MakinaError.from(signal.reason);
      throw MakinaError.from(err);
    } finally {
      signal?.removeEventListener("abort", onAbort);
      socket.destroy();
    }
  }

  async close(): Promise<void> {
    await this.o.supervisor.stop();
    if (!this.closed) this.o.onClose?.();
    this.closed = true;
  }
}
