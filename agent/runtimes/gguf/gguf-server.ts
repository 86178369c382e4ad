import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { parseArgs } from "node:util";
import { createLogger, MakinaError, type ChatMessage } from "../../../proto/index.js";
import type { ChatInput, RuntimeEvent } from "../model-runtime.js";
import { createLlama } from "./gguf-engine.js";
import { loadGgufModel } from "./gguf-runtime.js";

/**
 * The GGUF runtime as its own process: loads one model with node-llama-cpp and
 * serves it as an OpenAI-compatible server on 127.0.0.1, so that a crash of the
 * model never takes the agent down. The agent starts it under supervision:
 *   node gguf-server.js --model FILE --port N --threads N --context N --sequences N [--cpu]
 * It streams usage in every chunk (like vLLM's continuous_usage_stats) so a
 * canceled request is charged exactly, and stops generating when the client goes away.
 */
const { values } = parseArgs({
  options: {
    model: { type: "string" },
    host: { type: "string", default: "127.0.0.1" },
    port: { type: "string" },
    threads: { type: "string", default: "1" },
    context: { type: "string", default: "4096" },
    sequences: { type: "string", default: "2" },
    cpu: { type: "boolean", default: false },
  },
});
if (!values.model || !values.port) {
  process.stderr.write("usage: gguf-server --model FILE --port N [--threads N] [--context N] [--sequences N] [--cpu]\n");
  process.exit(2);
}

const log = createLogger({ level: "warn" });
const threads = Number(values.threads);
const llama = await createLlama({ threads, gpu: values.cpu ? false : "auto", log });
const runtime = await loadGgufModel(llama, values.model, { maxContextSize: Number(values.context), sequences: Number(values.sequences), threads });
const modelName = values.model.split("/").pop() ?? "model";

function fail(res: ServerResponse, err: unknown): void {
  const e = MakinaError.from(err);
  if (e.code === "internal_error") log.error("generation failed", { err });
  res.writeHead(e.mapping.http === 499 ? 400 : e.mapping.http, { "content-type": "application/json" }).end(JSON.stringify(e.toBody()));
}

function toInput(body: Record<string, unknown>): ChatInput {
  const stop = body.stop === undefined || body.stop === null ? [] : Array.isArray(body.stop) ? (body.stop as string[]) : [String(body.stop)];
  return {
    messages: (body.messages as ChatMessage[]).map((m) => ({ role: String(m.role), content: String(m.content ?? "") })),
    temperature: typeof body.temperature === "number" ? body.temperature : 1,
    topP: typeof body.top_p === "number" ? body.top_p : 1,
    maxTokens: typeof body.max_tokens === "number" ? body.max_tokens : 0,
    stop,
    seed: typeof body.seed === "number" ? body.seed : undefined,
    presencePenalty: typeof body.presence_penalty === "number" ? body.presence_penalty : 0,
    frequencyPenalty: typeof body.frequency_penalty === "number" ? body.frequency_penalty : 0,
  };
}

async function chat(req: IncomingMessage, res: ServerResponse): Promise<void> {
  let raw = "";
  for await (const c of req) raw += c;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(raw) as Record<string, unknown>;
    if (!Array.isArray(body.messages)) throw new Error("messages");
  } catch {
    fail(res, new MakinaError("invalid_json", "The body must be a JSON chat request."));
    return;
  }
  const controller = new AbortController();
  res.on("close", () => {
    if (!res.writableFinished) controller.abort(new MakinaError("canceled", "The client went away."));
  });
  const usage = { promptTokens: 0, completionTokens: 0 };
  const events = runtime.chat(toInput(body), { signal: controller.signal, usage })[Symbol.asyncIterator]();
  const usageJson = () => ({ prompt_tokens: usage.promptTokens, completion_tokens: usage.completionTokens, total_tokens: usage.promptTokens + usage.completionTokens });
  const stream = body.stream === true;
  let first: IteratorResult<RuntimeEvent>;
  try {
    first = await events.next();
  } catch (err) {
    fail(res, err);
    return;
  }
  if (!stream) {
    let text = "";
    let finish = "stop";
    try {
      for (let ev = first; !ev.done; ev = await events.next()) {
        if (ev.value.type === "text") text += ev.value.text;
        else finish = ev.value.finishReason;
      }
    } catch (err) {
      fail(res, err);
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(
      JSON.stringify({ id: "chatcmpl-gguf", object: "chat.completion", created: Math.floor(Date.now() / 1000), model: modelName, choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: finish }], usage: usageJson() }),
    );
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const send = async (payload: unknown) => {
    if (!res.write(`data: ${JSON.stringify(payload)}\n\n`)) await Promise.race([once(res, "drain"), once(res, "close")]);
  };
  const chunk = (delta: Record<string, unknown>, finish: string | null) => ({ id: "chatcmpl-gguf", object: "chat.completion.chunk", model: modelName, choices: [{ index: 0, delta, finish_reason: finish }], usage: usageJson() });
  try {
    for (let ev = first; !ev.done; ev = await events.next()) {
      if (controller.signal.aborted) return;
      if (ev.value.type === "text") await send(chunk({ content: ev.value.text }, null));
      else await send(chunk({}, ev.value.finishReason));
    }
    res.end("data: [DONE]\n\n");
  } catch (err) {
    if (controller.signal.aborted) return;
    await send({ error: MakinaError.from(err).toBody().error });
    res.end();
  } finally {
    await events.return?.(undefined);
  }
}

const server = createServer((req, res) => {
  if (req.method === "GET" && req.url === "/health") return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ status: "ok", context_size: runtime.contextSize }));
  if (req.method === "GET" && req.url === "/v1/models") return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ object: "list", data: [{ id: modelName, object: "model", created: 0, owned_by: "makina" }] }));
  if (req.method === "POST" && req.url === "/v1/chat/completions") return void chat(req, res).catch((err: unknown) => fail(res, err));
  fail(res, new MakinaError("unknown_url", `Unknown request URL: ${req.method} ${req.url}`));
});
server.listen(Number(values.port), values.host);
const shutdown = () => {
  server.close();
  void runtime.close().finally(() => process.exit(0));
};
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);
// The agent holds our stdin open; when it closes, the agent is gone (even killed with SIGKILL): stop too.
process.stdin.on("end", shutdown);
process.stdin.on("close", shutdown);
process.stdin.resume();
