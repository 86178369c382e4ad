import { connect, type Socket } from "node:net";
import { MakinaError } from "../../../proto/index.js";
import { onFrames, writeFrame, type AgentFrame, type ProcessFrame } from "./gguf-wire.js";

/**
 * One connection to a GGUF model process (gguf-wire.ts), for one request at a time and, once a request ended
 * cleanly, the next: the agent keeps such connections open rather than connect per request, which spares both
 * processes a socket's setup on every request's path. Frames are read as they come (`onFrames`) and queued
 * until `next` takes them. Destroying the connection cancels the request it carries.
 */
export class ProcessConnection {
  private readonly queue: ProcessFrame[] = [];
  private head = 0;
  private wake: (() => void) | undefined;
  private closed = false;
  private failure: Error | undefined;

  private constructor(private readonly socket: Socket) {
    onFrames<ProcessFrame>(socket, (frame) => {
      this.queue.push(frame);
      this.wake?.();
    });
    socket.on("error", (err) => (this.failure ??= err));
    socket.on("close", () => {
      this.closed = true;
      this.wake?.();
    });
  }

  /** Connects to a model process's socket; rejects with `runtime_unavailable` when nothing listens. */
  static open(path: string, signal?: AbortSignal): Promise<ProcessConnection> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(MakinaError.from(signal.reason));
      const socket = connect(path);
      const onAbort = () => {
        socket.destroy();
        reject(MakinaError.from(signal?.reason));
      };
      const onError = (err: Error) => {
        signal?.removeEventListener("abort", onAbort);
        reject(new MakinaError("runtime_unavailable", "The GGUF model process is not reachable.", { cause: err, retryAfterMs: 1000 }));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      socket.once("error", onError);
      socket.once("connect", () => {
        signal?.removeEventListener("abort", onAbort);
        socket.off("error", onError);
        resolve(new ProcessConnection(socket));
      });
    });
  }

  /** Open, and nothing of an earlier request left unread: it may carry a request. */
  get idle(): boolean {
    return !this.closed && !this.socket.destroyed && this.head === this.queue.length;
  }

  send(frame: AgentFrame): void {
    writeFrame(this.socket, frame);
  }

  /** The next frame; undefined once the connection closed. Rejects with what broke the connection (a frame that is not JSON). */
  async next(): Promise<ProcessFrame | undefined> {
    while (this.head === this.queue.length) {
      if (this.closed) {
        if (this.failure instanceof MakinaError) throw this.failure;
        return undefined;
      }
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
    const frame = this.queue[this.head++]!;
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    }
    return frame;
  }

  /** Closes the connection (the model process cancels the request it carries). */
  destroy(): void {
    this.socket.destroy();
  }
}
