import { rmSync } from "node:fs";
import { basename } from "node:path";
import { createServer, type Socket } from "node:net";
import { parseArgs } from "node:util";
import { createLogger, MakinaError } from "../../../proto/index.js";
import { CreditGate } from "../../flow/index.js";
import { createLlama } from "./gguf-engine.js";
import { loadGgufModel } from "./gguf-runtime.js";
import { FrameOutbox } from "./frame-outbox.js";
import type { ChatInput } from "../model-runtime.js";
import { errorFrame, frameInterval, GGUF_FRAME_MS, onFrames, writeFrame, type AgentFrame } from "./gguf-wire.js";

/**
 * The GGUF runtime as its own process: loads one model with node-llama-cpp and
 * serves it on a local socket (see gguf-wire.ts), so that a crash of the model
 * never takes the agent down. The agent starts it under supervision:
 *   node gguf-server.js --model FILE --socket PATH --threads N --context N --sequences N --frame-ms N [--cpu]
 * The agent keeps its connections open: each carries one request at a time, and
 * the next once the last one's end or error was sent. Every text frame carries the
 * usage so far, so a canceled request is charged exactly; a request decodes only as
 * far as the agent's credit reaches, and stops when its connection closes. A request's tokens leave in frames (FrameOutbox):
 * the first at once, then about one per --frame-ms (longer while more than two
 * requests decode at once, see frameInterval).
 */
const { values } = parseArgs({
  options: {
    model: { type: "string" },
    socket: { type: "string" },
    threads: { type: "string", default: "1" },
    context: { type: "string", default: "4096" },
    sequences: { type: "string", default: "2" },
    // The machine's whole thread budget: the most a context of this process may be given when it wakes.
    "thread-budget": { type: "string" },
    "frame-ms": { type: "string", default: String(GGUF_FRAME_MS) },
    cpu: { type: "boolean", default: false },
    // Start with the model unloaded (restarted while it slept): the first `wake` frame loads it.
    asleep: { type: "boolean", default: false },
  },
});
if (!values.model || !values.socket) {
  process.stderr.write("usage: gguf-server --model FILE --socket PATH [--threads N] [--context N] [--sequences N] [--frame-ms N] [--cpu] [--asleep]\n");
  process.exit(2);
}
const socketPath = values.socket;

const log = createLogger({ level: "warn" });
const threads = Number(values.threads);
const frameMs = Number(values["frame-ms"]);
if (!Number.isFinite(frameMs) || frameMs < 0) {
  process.stderr.write(`gguf-server: --frame-ms must be a number of ms, 0 or more (got '${values["frame-ms"]}')\n`);
  process.exit(2);
}
/** Requests decoding now (their first event came): their frames grow longer with their number (frameInterval). */
const decoding = { count: 0 };
const llama = await createLlama({ threads: Math.max(threads, Number(values["thread-budget"] ?? threads)), gpu: values.cpu ? false : "auto", log });
const load = (contextThreads: number) => loadGgufModel(llama, values.model!, { maxContextSize: Number(values.context), sequences: Number(values.sequences), threads: contextThreads });
/** The model loaded, or undefined while it sleeps (an on-demand stack's, unloaded); `contextSize` stays what it was (started
 * asleep: the context asked, which the first load caps at what the model was trained for; the agent keeps its first). */
let runtime: Awaited<ReturnType<typeof load>> | undefined = values.asleep ? undefined : await load(threads);
const contextSize = runtime?.contextSize ?? Number(values.context);
/** A line of what the process does, on stderr: the agent keeps it as the stack's log an admin reads. */
const say = (text: string) => process.stderr.write(`gguf-server: ${text}\n`);
say(runtime ? `loaded ${basename(values.model!)}: ${contextSize} tokens of context × ${values.sequences} sequences, ${threads} threads` : `started asleep: ${basename(values.model!)} loads on the first request`);
/** A sleep or wake under way: the next waits for it. */
let changing: Promise<unknown> = Promise.resolve();

/**
 * Disposes the model and its contexts (`sleep`) or loads it again (`wake`), one change at a time, in the order they
 * came; answers once done. A sleep stops the requests still running on the model (one whose cancel or closed
 * connection has not come yet: it comes on a connection of its own) and disposes it once they ended; a wake sent
 * meanwhile waits for it.
 */
function residency(socket: Socket, frame: Extract<AgentFrame, { type: "sleep" | "wake" }>): void {
  changing = changing.then(async () => {
    try {
      if (frame.type === "sleep") {
        const loaded = runtime;
        runtime = undefined;
        await loaded?.close();
        say("asleep: the model is unloaded");
        writeFrame(socket, { type: "slept" });
      } else {
        if (!runtime) {
          runtime = await load(Math.max(1, frame.threads));
          say(`awake: the model is loaded, ${Math.max(1, frame.threads)} threads`);
        }
        writeFrame(socket, { type: "awake", contextSize: runtime.contextSize, memoryBytes: runtime.memoryBytes });
      }
    } catch (err) {
      writeFrame(socket, errorFrame(MakinaError.from(err)));
    }
  });
}

/** A request running on a connection: its credit, and what cancels it. */
interface Running {
  gate: CreditGate;
  /** The request's: aborted by the agent's cancel frame, or by its connection's close. */
  controller: AbortController;
  /** Whether the agent asked for a `stopped` frame (its cancel frame), rather than went away. */
  cancelled: boolean;
  /** The connection's: aborted when it closes (a frame waiting for credit is given up then, never before). */
  closed: AbortSignal;
}

/**
 * Serves one connection of the agent's: chat requests one after another (each paced by the agent's credit),
 * and health checks between them. Closing the connection cancels the request it carries.
 */
function serve(socket: Socket): void {
  let running: Running | undefined;
  const closed = new AbortController();
  socket.on("error", () => {});
  socket.on("close", () => {
    closed.abort(new MakinaError("canceled", "The agent closed the connection."));
    running?.controller.abort(new MakinaError("canceled", "The agent closed the request."));
  });
  onFrames<AgentFrame>(socket, (frame) => {
    // Credit for a request that ended meanwhile is nobody's.
    if (frame.type === "credit") return void running?.gate.add(frame.n);
    if (frame.type === "cancel") {
      if (!running) return;
      // What is held goes at once, then the request's `stopped` frame with what it used.
      running.cancelled = true;
      running.gate.add(Number.MAX_SAFE_INTEGER);
      running.controller.abort(new MakinaError("canceled", "The agent canceled the request."));
      return;
    }
    if (running) {
      // One request at a time: an agent that sends another before the end is not one of ours.
      writeFrame(socket, errorFrame(new MakinaError("invalid_value", "A request came before the last one on this connection ended.")));
      socket.destroy();
      return;
    }
    if (frame.type === "health") {
      writeFrame(socket, { type: "health", contextSize, pausedRequests: runtime?.pausedRequests ?? 0, memoryBytes: runtime?.memoryBytes ?? 0 });
      return;
    }
    if (frame.type === "sleep" || frame.type === "wake") return residency(socket, frame);
    if (frame.type !== "chat") {
      writeFrame(socket, errorFrame(new MakinaError("invalid_value", "A frame must be a chat, credit or health frame.")));
      socket.end();
      return;
    }
    const request: Running = { gate: new CreditGate(frame.window), controller: new AbortController(), cancelled: false, closed: closed.signal };
    running = request;
    // The connection is free for the next request once this one's last frame is written.
    void chat(socket, frame.input, request, () => {
      if (running === request) running = undefined;
    }).catch(() => socket.destroy());
  });
}

/** Runs one chat request, its frames written to `socket` (FrameOutbox); `over` is called as its last frame is written. */
async function chat(socket: Socket, input: ChatInput, request: Running, over: () => void): Promise<void> {
  const { gate, controller } = request;
  const model = runtime;
  if (!model) {
    writeFrame(socket, errorFrame(new MakinaError("runtime_unavailable", "The model is unloaded.", { retryAfterMs: 1000 })));
    return over();
  }
  const outbox = new FrameOutbox({ write: (lines) => socket.write(lines), gate, signal: request.closed, frameMs: () => frameInterval(frameMs, decoding.count) });
  // Counted once it decodes (not while it waits for a sequence), until it ends.
  let counted = false;
  let ended = false;
  try {
    for await (const ev of model.chat(input, { signal: controller.signal })) {
      if (!counted) {
        counted = true;
        decoding.count++;
      }
      if (ev.type === "end") {
        await outbox.finish({ type: "end", finishReason: ev.finishReason === "canceled" ? "stop" : ev.finishReason, ...ev.usage });
        ended = true;
        over();
      } else if (ev.type === "stopped") {
        // Canceled by the agent's frame: its usage; failed: the error and its usage (a closed connection hears nothing).
        if (request.closed.aborted) return;
        if (!request.cancelled && ev.error.code === "internal_error") log.error("generation failed", { err: ev.error, cause: ev.error.cause });
        outbox.fail(request.cancelled ? { type: "stopped", ...ev.usage } : errorFrame(ev.error, ev.usage));
        ended = true;
        over();
        return;
      } else {
        const sent = outbox.add(ev);
        if (sent) await sent;
      }
    }
    if (!ended) throw new MakinaError("internal_error", "The model stopped without ending its answer.");
  } catch (err) {
    // Once its end is sent, the connection may carry the agent's next request: nothing more of this one goes on it.
    if (ended) {
      log.error("generation failed after its end", { err });
      return;
    }
    if (request.closed.aborted) return;
    if (request.cancelled) {
      // Refused before it began: it used nothing.
      outbox.fail({ type: "stopped", promptTokens: 0, completionTokens: 0 });
      over();
      return;
    }
    const e = MakinaError.from(err);
    if (e.code === "internal_error") log.error("generation failed", { err });
    outbox.fail(errorFrame(e));
    over();
  } finally {
    outbox.close();
    if (counted) decoding.count--;
  }
}

rmSync(socketPath, { force: true });
const server = createServer(serve);
server.listen(socketPath);
const shutdown = () => {
  server.close();
  rmSync(socketPath, { force: true });
  void (runtime?.close() ?? Promise.resolve()).finally(() => process.exit(0));
};
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);
// The agent holds our stdin open; when it closes, the agent is gone (even killed with SIGKILL): stop too.
process.stdin.on("end", shutdown);
process.stdin.on("close", shutdown);
process.stdin.resume();
