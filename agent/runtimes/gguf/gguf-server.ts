import { rmSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { parseArgs } from "node:util";
import { createLogger, MakinaError } from "../../../proto/index.js";
import { CreditGate } from "../../flow/index.js";
import { createLlama } from "./gguf-engine.js";
import { loadGgufModel } from "./gguf-runtime.js";
import { FrameOutbox } from "./frame-outbox.js";
import { errorFrame, frameInterval, GGUF_FRAME_MS, readFrames, writeFrame, type AgentFrame } from "./gguf-wire.js";

/**
 * The GGUF runtime as its own process: loads one model with node-llama-cpp and
 * serves it on a local socket (see gguf-wire.ts), so that a crash of the model
 * never takes the agent down. The agent starts it under supervision:
 *   node gguf-server.js --model FILE --socket PATH --threads N --context N --sequences N --frame-ms N [--cpu]
 * Every text frame carries the usage so far, so a canceled request is charged
 * exactly; a request decodes only as far as the agent's credit reaches, and stops
 * when its connection closes. A request's tokens leave in frames (FrameOutbox):
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
    "frame-ms": { type: "string", default: String(GGUF_FRAME_MS) },
    cpu: { type: "boolean", default: false },
  },
});
if (!values.model || !values.socket) {
  process.stderr.write("usage: gguf-server --model FILE --socket PATH [--threads N] [--context N] [--sequences N] [--frame-ms N] [--cpu]\n");
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
const llama = await createLlama({ threads, gpu: values.cpu ? false : "auto", log });
const runtime = await loadGgufModel(llama, values.model, { maxContextSize: Number(values.context), sequences: Number(values.sequences), threads });

/** Serves one connection: a health check, or one chat request paced by the agent's credit. */
async function serve(socket: Socket): Promise<void> {
  const controller = new AbortController();
  socket.on("close", () => controller.abort(new MakinaError("canceled", "The agent closed the request.")));
  socket.on("error", () => {});
  const frames = readFrames<AgentFrame>(socket);
  const first = await frames.next();
  if (first.done) return;
  if (first.value.type === "health") {
    writeFrame(socket, { type: "health", contextSize: runtime.contextSize, pausedRequests: runtime.pausedRequests });
    socket.end();
    return;
  }
  if (first.value.type !== "chat") {
    writeFrame(socket, errorFrame(new MakinaError("invalid_value", "The first frame must be a chat or health frame.")));
    socket.end();
    return;
  }
  const gate = new CreditGate(first.value.window);
  void (async () => {
    for await (const frame of frames) if (frame.type === "credit") gate.add(frame.n);
  })().catch(() => controller.abort(new MakinaError("canceled", "The agent sent a frame that is not JSON.")));
  const usage = { promptTokens: 0, completionTokens: 0 };
  const outbox = new FrameOutbox({ write: (lines) => socket.write(lines), gate, signal: controller.signal, usage, frameMs: () => frameInterval(frameMs, decoding.count) });
  // Counted once it decodes (not while it waits for a sequence), until it ends.
  let counted = false;
  try {
    for await (const ev of runtime.chat(first.value.input, { signal: controller.signal, usage })) {
      if (!counted) {
        counted = true;
        decoding.count++;
      }
      if (ev.type === "end") await outbox.finish({ type: "end", finishReason: ev.finishReason === "canceled" ? "stop" : ev.finishReason, ...ev.usage });
      else {
        const sent = outbox.add(ev);
        if (sent) await sent;
      }
    }
  } catch (err) {
    if (controller.signal.aborted) return;
    const e = MakinaError.from(err);
    if (e.code === "internal_error") log.error("generation failed", { err });
    outbox.fail(errorFrame(e));
  } finally {
    outbox.close();
    if (counted) decoding.count--;
  }
  socket.end();
}

rmSync(socketPath, { force: true });
const server = createServer((socket) => void serve(socket).catch((err: unknown) => socket.destroy(err as Error)));
server.listen(socketPath);
const shutdown = () => {
  server.close();
  rmSync(socketPath, { force: true });
  void runtime.close().finally(() => process.exit(0));
};
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);
// The agent holds our stdin open; when it closes, the agent is gone (even killed with SIGKILL): stop too.
process.stdin.on("end", shutdown);
process.stdin.on("close", shutdown);
process.stdin.resume();
