import type { Socket } from "node:net";
import { connect } from "node:net";
import { MakinaError, isErrorCode } from "../../../proto/index.js";
import type { EmbeddingVector, ToolCallDelta } from "../../../proto/index.js";
import type { ChatInput } from "../model-runtime.js";

/**
 * The pipe between the agent and a GGUF model process: one local socket
 * connection per request, newline-delimited JSON frames in both directions.
 *
 *   agent → process  {type:"chat", input, window}   first frame: the request, and how many bytes of frames may come unasked
 *                    {type:"credit", n}             the agent took frames of n bytes: n more may come (sent per GGUF_WINDOW / 4 or more)
 *                    (closing the connection cancels the request)
 *   process → agent  {type:"text", text, promptTokens, completionTokens}   only against credit
 *                    {type:"toolCall", index, id, name, arguments, promptTokens, completionTokens}   a piece of a tool call, against credit too
 *                    {type:"embedding", index, values, promptTokens, completionTokens}   an input's vector (embeddings request), against credit too
 *                    {type:"end", finishReason, promptTokens, completionTokens}
 *                    {type:"error", code, message, param, retryAfterMs}
 *
 * Credit counts the bytes of what frames carry ({@link frameCost}); the process sends while any is left, so a
 * frame larger than the window still goes. The process sends the first token at once and then at most one
 * frame of text about every {@link GGUF_FRAME_MS} ms by default (the tokens decoded meanwhile, merged), so a
 * fast model costs the agent and the relay a frame per interval rather than per token, and a slow one (a token
 * per interval or less) has each token sent as it comes. A process whose credit is spent sends what it holds
 * as soon as credit comes, and decodes nothing more meanwhile, whatever the interval.
 *
 * Health checks are a connection that sends {type:"health"} and reads
 * {type:"health", contextSize, pausedRequests}: requests whose decoding waits for credit.
 * Credit reaches all the way to the decoder: a process with no credit left stops
 * decoding that request (see `paceEvaluation`), so a slow client holds its slot
 * instead of having its answer generated into a buffer.
 */
export type AgentFrame = { type: "chat"; input: ChatInput; window: number } | { type: "credit"; n: number } | { type: "health" };

export type ProcessFrame =
  | { type: "text"; text: string; promptTokens: number; completionTokens: number }
  | ({ type: "toolCall"; promptTokens: number; completionTokens: number } & ToolCallDelta)
  | ({ type: "embedding"; promptTokens: number; completionTokens: number } & EmbeddingVector)
  | { type: "end"; finishReason: "stop" | "length" | "tool_calls"; promptTokens: number; completionTokens: number }
  | { type: "error"; code: string; message: string; param: string | null; retryAfterMs: number | null }
  | { type: "health"; contextSize: number; pausedRequests: number };

/**
 * Bytes of frames a process may send before the agent returns credit: with the frame on its way and the few
 * events its decoder reads ahead, what a paused reader lets be decoded (a few hundred tokens of English at most;
 * the agent returns credit a quarter of this at a time).
 */
export const GGUF_WINDOW = 1024;

/**
 * After the first token, a process sends a request's text at most once per this many ms unless told otherwise
 * (`MAKINA_AGENT_STREAM_INTERVAL_MS`): about 30 frames a second, each a few tokens of a fast model.
 */
export const GGUF_FRAME_MS = 32;

/** The longest a busy process makes its frames by itself (see {@link frameInterval}). */
export const GGUF_MAX_FRAME_MS = 100;

/**
 * The interval of a process's frames while `active` requests decode: the configured one for one or two, then
 * longer with each request, up to {@link GGUF_MAX_FRAME_MS} (or the configured one, if longer). Under load
 * the machine's CPU goes to decoding rather than to a frame per request every few ms; 0 stays 0.
 */
export function frameInterval(baseMs: number, active: number): number {
  return Math.max(baseMs, Math.min(GGUF_MAX_FRAME_MS, (baseMs * active) / 2));
}

/** What a frame costs of the window: the UTF-8 bytes of its text or call piece, 4 per number of a vector. */
export function frameCost(frame: { type: "text"; text: string } | ({ type: "toolCall" } & ToolCallDelta) | ({ type: "embedding" } & EmbeddingVector)): number {
  if (frame.type === "text") return Buffer.byteLength(frame.text);
  if (frame.type === "toolCall") return frame.id.length + frame.name.length + Buffer.byteLength(frame.arguments);
  return frame.values.length * 4;
}

/** Writes one frame (JSON escapes newlines inside strings, so a line is a frame). */
export function writeFrame(socket: Socket, frame: AgentFrame | ProcessFrame): boolean {
  return socket.write(`${JSON.stringify(frame)}\n`);
}

/** Reads frames from a socket until it ends. Leaving the loop early leaves the socket to the caller. */
export async function* readFrames<T>(socket: Socket): AsyncGenerator<T> {
  socket.setEncoding("utf8");
  let buffer = "";
  for await (const chunk of socket as AsyncIterable<string>) {
    buffer += chunk;
    let i: number;
    while ((i = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, i);
      buffer = buffer.slice(i + 1);
      if (line) yield JSON.parse(line) as T;
    }
  }
}

/** The error frame of anything thrown. */
export function errorFrame(err: unknown): ProcessFrame {
  const e = MakinaError.from(err);
  return { type: "error", code: e.code, message: e.message, param: e.param, retryAfterMs: e.retryAfterMs ?? null };
}

/** The MakinaError an error frame stands for. */
export function fromErrorFrame(frame: Extract<ProcessFrame, { type: "error" }>): MakinaError {
  if (!isErrorCode(frame.code)) return new MakinaError("internal_error", frame.message);
  return new MakinaError(frame.code, frame.message, { param: frame.param, retryAfterMs: frame.retryAfterMs ?? undefined });
}

/** Opens a connection to a model process's socket; rejects with `runtime_unavailable` when nothing listens. */
export function connectToProcess(path: string, signal?: AbortSignal): Promise<Socket> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(MakinaError.from(signal.reason));
    const socket = connect(path);
    const onAbort = () => {
      socket.destroy();
      reject(MakinaError.from(signal?.reason));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    socket.once("connect", () => {
      signal?.removeEventListener("abort", onAbort);
      socket.off("error", onError);
      resolve(socket);
    });
    const onError = (err: Error) => {
      signal?.removeEventListener("abort", onAbort);
      reject(new MakinaError("runtime_unavailable", "The GGUF model process is not reachable.", { cause: err, retryAfterMs: 1000 }));
    };
    socket.once("error", onError);
  });
}

/** A readiness probe and context-size query: the process's answer to a health frame. */
export async function processHealth(path: string, signal?: AbortSignal): Promise<{ contextSize: number; pausedRequests: number }> {
  const deadline = AbortSignal.any([...(signal ? [signal] : []), AbortSignal.timeout(2000)]);
  const socket = await connectToProcess(path, deadline);
  const onAbort = () => socket.destroy();
  deadline.addEventListener("abort", onAbort, { once: true });
  try {
    writeFrame(socket, { type: "health" });
    for await (const frame of readFrames<ProcessFrame>(socket)) {
      if (frame.type === "health") return { contextSize: frame.contextSize, pausedRequests: frame.pausedRequests };
    }
    throw new MakinaError("runtime_unavailable", "The GGUF model process did not answer its health check.");
  } finally {
    deadline.removeEventListener("abort", onAbort);
    socket.destroy();
  }
}
