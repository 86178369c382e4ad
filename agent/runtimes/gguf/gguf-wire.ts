import type { Socket } from "node:net";
import { MakinaError, isErrorCode } from "../../../proto/index.js";
import type { EmbeddingVector, RerankScore, ToolCallDelta, Usage } from "../../../proto/index.js";
import type { ChatInput } from "../model-runtime.js";

/**
 * The pipe between the agent and a GGUF model process: local socket connections that the agent keeps open
 * and reuses (one request at a time on each, see process-connection.ts), newline-delimited JSON frames in
 * both directions.
 *
 *   agent → process  {type:"chat", input, window}   first frame: the request, and how many bytes of frames may come unasked
 *                    {type:"credit", n}             the agent took frames of n bytes: n more may come (sent per GGUF_WINDOW / 4 or more)
 *                    {type:"cancel"}                stop the request: answered by its `stopped` frame, with what it used
 *                    (closing the connection cancels its request too, its usage unsaid; once a request's end, error
 *                    or stopped frame came, its connection may carry the next chat frame, and credit for the
 *                    request that ended is ignored)
 *   process → agent  {type:"text", text}            only against credit
 *                    {type:"toolCall", index, id, name, arguments}   a piece of a tool call, against credit too
 *                    {type:"embedding", index, values}   an input's vector (embeddings request), against credit too
 *                    {type:"score", index, score}   a document's relevance (rerank request), against credit too
 *                    {type:"end", finishReason, promptTokens, completionTokens}
 *                    {type:"error", code, message, param, retryAfterMs, promptTokens, completionTokens}
 *                    {type:"stopped", promptTokens, completionTokens}   the request canceled, what it used
 *   A request's tokens are said once, by the frame that ends it.
 *
 * Credit counts the bytes of what frames carry ({@link frameCost}); the process sends while any is left, so a
 * frame larger than the window still goes. The process sends the first token at once and then at most one
 * frame of text about every {@link GGUF_FRAME_MS} ms by default (the tokens decoded meanwhile, merged), so a
 * fast model costs the agent and the relay a frame per interval rather than per token, and a slow one (a token
 * per interval or less) has each token sent as it comes. A process whose credit is spent sends what it holds
 * as soon as credit comes, and decodes nothing more meanwhile, whatever the interval.
 *
 * An on-demand stack's model is unloaded and loaded again in the same process ({type:"sleep"}, answered
 * {type:"slept"} once the requests still running on it have stopped and the model and its contexts are disposed;
 * {type:"wake", threads}, answered {type:"awake", contextSize, memoryBytes} once loaded again, its contexts with that
 * many threads; each waits for the one before), on a connection with no request running:
 * a load then costs node-llama-cpp's own, not a process's start. Asleep, a chat is refused (503) and a health
 * check answered.
 *
 * A health check is {type:"health"} on a connection with no request running, answered
 * {type:"health", contextSize, pausedRequests, memoryBytes}: requests whose decoding waits for credit, and what the
 * loaded model holds in memory as node-llama-cpp says (0 while it sleeps).
 * Credit reaches all the way to the decoder: a process with no credit left stops
 * decoding that request (see `paceEvaluation`), so a slow client holds its slot
 * instead of having its answer generated into a buffer.
 */
export type AgentFrame = { type: "chat"; input: ChatInput; window: number } | { type: "credit"; n: number } | { type: "cancel" } | { type: "health" } | { type: "sleep" } | { type: "wake"; threads: number };

export type ProcessFrame =
  | { type: "text"; text: string }
  | ({ type: "toolCall" } & ToolCallDelta)
  | ({ type: "embedding" } & EmbeddingVector)
  | ({ type: "score" } & RerankScore)
  | ({ type: "end"; finishReason: "stop" | "length" | "tool_calls" } & Usage)
  | ({ type: "error"; code: string; message: string; param: string | null; retryAfterMs: number | null } & Usage)
  | ({ type: "stopped" } & Usage)
  | { type: "health"; contextSize: number; pausedRequests: number; memoryBytes: number }
  | { type: "slept" }
  | { type: "awake"; contextSize: number; memoryBytes: number };

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

/** What a frame costs of the window: the UTF-8 bytes of its text or call piece, 4 per number of a vector, 8 a score. */
export function frameCost(frame: { type: "text"; text: string } | ({ type: "toolCall" } & ToolCallDelta) | ({ type: "embedding" } & EmbeddingVector) | ({ type: "score" } & RerankScore)): number {
  if (frame.type === "text") return Buffer.byteLength(frame.text);
  if (frame.type === "toolCall") return frame.id.length + frame.name.length + Buffer.byteLength(frame.arguments);
  if (frame.type === "score") return 8;
  return frame.values.length * 4;
}

/** Writes one frame (JSON escapes newlines inside strings, so a line is a frame). */
export function writeFrame(socket: Socket, frame: AgentFrame | ProcessFrame): boolean {
  return socket.write(`${JSON.stringify(frame)}\n`);
}

/**
 * Calls `onFrame` with each frame that comes on `socket` (a line of JSON), as the bytes come, with no stream
 * or promise per frame. A line that is not JSON destroys the socket with `internal_error`: the other side is
 * not one of ours, or is broken.
 */
export function onFrames<T>(socket: Socket, onFrame: (frame: T) => void): void {
  socket.setEncoding("utf8");
  let buffer = "";
  socket.on("data", (chunk: string) => {
    buffer += chunk;
    let start = 0;
    let i: number;
    while ((i = buffer.indexOf("\n", start)) >= 0 && !socket.destroyed) {
      const line = buffer.slice(start, i);
      start = i + 1;
      if (!line) continue;
      let frame: T;
      try {
        frame = JSON.parse(line) as T;
      } catch (err) {
        socket.destroy(new MakinaError("internal_error", "A GGUF model process connection carried a frame that is not JSON.", { cause: err }));
        return;
      }
      onFrame(frame);
    }
    buffer = start === buffer.length ? "" : buffer.slice(start);
  });
}

/** The error frame of anything thrown, with what the request used until then. */
export function errorFrame(err: unknown, usage: Usage = { promptTokens: 0, completionTokens: 0 }): ProcessFrame {
  const e = MakinaError.from(err);
  return { type: "error", code: e.code, message: e.message, param: e.param, retryAfterMs: e.retryAfterMs ?? null, promptTokens: usage.promptTokens, completionTokens: usage.completionTokens };
}

/** The MakinaError an error frame stands for. */
export function fromErrorFrame(frame: Extract<ProcessFrame, { type: "error" }>): MakinaError {
  if (!isErrorCode(frame.code)) return new MakinaError("internal_error", frame.message);
  return new MakinaError(frame.code, frame.message, { param: frame.param, retryAfterMs: frame.retryAfterMs ?? undefined });
}
