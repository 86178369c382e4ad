import { isServiceTier, MakinaError, TIER_RANK, type Logger, type ResponseFormat } from "../../../proto/index.js";
import type { ProcessSupervisor } from "../../supervisor/index.js";
import { stoppedBy, type ChatInput, type ChatOptions, type ModelRuntime, type RuntimeEvent } from "../model-runtime.js";
import type { IncomingMessage } from "node:http";
import { readText, sseData, UpstreamClient } from "./upstream-client.js";

/** Options of {@link OpenAiServerRuntime}. */
export interface OpenAiServerOptions {
  /** The server's OpenAI base URL, e.g. `http://127.0.0.1:8000/v1`. */
  baseUrl: string;
  /** The model name to send. */
  model: string;
  /** Context size in tokens; 0 when the server does not say. */
  contextSize: number;
  /** The process serving it, when the agent runs it (vLLM, MLX); absent for a server that already runs. */
  supervisor?: ProcessSupervisor;
  /** Ask for usage in every chunk (vLLM's `continuous_usage_stats`), so a canceled request is charged exactly. */
  continuousUsage?: boolean;
  /** Called once after the runtime closed (to give back what it held). */
  onClose?: () => void;
  /** The key the server was started with, sent with every request. */
  apiKey?: string;
  /**
   * The server has vLLM's sleep routes (`--enable-sleep-mode` in its development mode): it sleeps instead of stopping.
   * Its process, ending while it sleeps, is not restarted by its supervisor (see {@link OpenAiServerRuntime}).
   */
  sleepMode?: boolean;
  /** Where the runtime says what it decided on its own (a server that ended asleep kept stopped). */
  log?: Logger;
  /**
   * The server was started with vLLM's `--scheduling-policy priority`: each request carries `priority` from its
   * service tier (0 `priority`, 1 `default`, 2 `flex`; vLLM runs lower values first).
   */
  priorityScheduling?: boolean;
}

/** The longest vLLM may take to sleep or to wake (moving a large model's weights between GPU and CPU memory). */
const SLEEP_TIMEOUT_MS = 300_000;

/** A tool call as OpenAI-compatible servers write it: whole in an answer, in pieces in a stream. */
interface UpstreamToolCall {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}

interface Chunk {
  choices?: { delta?: { content?: string | null; tool_calls?: UpstreamToolCall[] }; message?: { content?: string | null; tool_calls?: UpstreamToolCall[] }; finish_reason?: string | null }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
  error?: { message?: string };
}

/**
 * A model served by an OpenAI-compatible HTTP server on this machine (vLLM,
 * mlx_lm.server, llama-server, Ollama, LM Studio…), over a pool of keep-alive
 * connections. A streamed request is forwarded as a stream, a non-streamed one
 * in one piece; aborting the signal aborts the HTTP request, which stops the server.
 *
 * A supervised server in sleep mode whose process ends (a crash, or killed as wedged) while it sleeps, or while it
 * is asked to, is kept stopped rather than restarted: vLLM cannot start asleep, and a restart would load its
 * weights and take its share of the GPU's memory (`--gpu-memory-utilization`) while the machine's memory budget
 * counts the model unloaded, beside whatever was loaded since. Its {@link wake} then fails at once, and the
 * next load starts a new server (a cold start instead of a wake).
 */
export class OpenAiServerRuntime implements ModelRuntime {
  readonly contextSize: number;
  readonly endpoint: string;
  private readonly upstream: UpstreamClient;

  get pid(): number | undefined {
    return this.o.supervisor?.pid;
  }

  readonly sleep?: () => Promise<void>;
  readonly wake?: () => Promise<void>;
  /** Asleep, or asked to sleep, and not woken since: its process is not to be restarted if it ends. */
  private asleep = false;

  constructor(private readonly o: OpenAiServerOptions) {
    this.contextSize = o.contextSize;
    this.endpoint = o.baseUrl;
    this.upstream = new UpstreamClient(o.baseUrl, o.apiKey);
    if (o.sleepMode) {
      this.sleep = async () => {
        // Set before asking: a server that ends while it goes to sleep is not restarted awake either.
        this.asleep = true;
        await this.control("/sleep?level=1");
      };
      this.wake = async () => {
        if (o.supervisor?.state === "stopped" || o.supervisor?.state === "failed") throw new MakinaError("runtime_unavailable", "The runtime's server ended while it slept: it is started again.", { retryAfterMs: 5000 });
        await this.control("/wake_up");
        this.asleep = false;
      };
      const supervisor = o.supervisor;
      // The supervisor says `restarting` once the process ended and before it starts another: stopped now, it starts none.
      supervisor?.on("state", (state) => {
        if (state !== "restarting" || !this.asleep) return;
        o.log?.warn("a sleeping model server ended: kept stopped, its next load starts it again", { error: supervisor.lastError });
        void supervisor.stop();
      });
    }
  }

  /** One of vLLM's sleep routes, beside its OpenAI routes (not under `/v1`). */
  private async control(path: string): Promise<void> {
    const root = this.o.baseUrl.replace(/\/v1\/?$/, "");
    const res = await fetch(`${root}${path}`, { method: "POST", headers: this.o.apiKey ? { authorization: `Bearer ${this.o.apiKey}` } : {}, signal: AbortSignal.timeout(SLEEP_TIMEOUT_MS) });
    await res.arrayBuffer();
    if (!res.ok) throw new MakinaError("runtime_unavailable", `The runtime's server answered ${res.status} to ${path.split("?")[0]}.`, { retryAfterMs: 5000 });
  }

  /** vLLM's `priority` of a request, from its tier, when the server schedules by it. */
  private priority(input: ChatInput): { priority?: number } {
    return this.o.priorityScheduling ? { priority: TIER_RANK[isServiceTier(input.serviceTier) ? input.serviceTier : "default"] } : {};
  }

  async *chat(input: ChatInput, options: ChatOptions = {}): AsyncGenerator<RuntimeEvent> {
    if (this.o.supervisor && this.o.supervisor.state !== "ready") {
      throw new MakinaError("runtime_unavailable", `The runtime is ${this.o.supervisor.state}.`, { retryAfterMs: 5000 });
    }
    if (input.embed?.length) {
      yield* this.embed(input, options);
      return;
    }
    if (input.rerank) {
      yield* this.rerank(input, options);
      return;
    }
    // The relay sends counts only to GGUF stacks: one that reaches a server here is refused, never run as a chat.
    if (input.countOnly) throw new MakinaError("unsupported_parameter", "This runtime cannot count tokens: only a GGUF stack holds its model's tokenizer on the machine.", { param: "model" });
    const body = {
      model: this.o.model,
      messages: input.tools?.length || input.messages.some((m) => m.toolCalls?.length || m.toolCallId || m.parts?.length) ? upstreamMessages(input.messages) : input.messages,
      ...(input.tools?.length ? upstreamTools(input) : {}),
      temperature: input.temperature,
      top_p: input.topP,
      ...(input.maxTokens ? { max_tokens: input.maxTokens } : {}),
      ...(input.stop.length ? { stop: input.stop } : {}),
      ...(input.seed !== undefined ? { seed: input.seed } : {}),
      ...(input.presencePenalty ? { presence_penalty: input.presencePenalty } : {}),
      ...(input.frequencyPenalty ? { frequency_penalty: input.frequencyPenalty } : {}),
      ...(input.responseFormat ? { response_format: upstreamResponseFormat(input.responseFormat) } : {}),
      stream: input.stream,
      ...this.priority(input),
      ...(input.stream ? { stream_options: { include_usage: true, ...(this.o.continuousUsage ? { continuous_usage_stats: true } : {}) } } : {}),
    };
    const { signal } = options;
    const fail = (err: unknown): never => {
      if (signal?.aborted) throw MakinaError.from(signal.reason);
      throw err instanceof MakinaError ? err : new MakinaError("runtime_unavailable", "The runtime's server is not reachable.", { cause: err, retryAfterMs: 5000 });
    };
    const res = await this.upstream.post("chat/completions", JSON.stringify(body), signal).catch(fail);
    await refuseUnlessOk(res);
    let promptTokens = 0;
    let completionTokens = 0;
    let finish = "stop";
    try {
      if (!input.stream) {
        const reply = JSON.parse(await readText(res)) as Chunk;
        if (reply.error) throw new MakinaError("runtime_unavailable", `The runtime failed: ${reply.error.message ?? "unknown error"}`);
        const choice = reply.choices?.[0];
        const text = choice?.message?.content ?? "";
        const calls = choice?.message?.tool_calls ?? [];
        promptTokens = reply.usage?.prompt_tokens ?? 0;
        completionTokens = reply.usage?.completion_tokens ?? (text || calls.length ? 1 : 0);
        finish = choice?.finish_reason ?? "stop";
        if (text) yield { type: "text", text };
        for (const [i, c] of calls.entries()) yield toolCallEvent(c, i);
      } else {
        let reported = false;
        for await (const data of sseData(res)) {
          // Read on past [DONE] to the body's end, so the connection goes back to the pool.
          if (data === "[DONE]") continue;
          const chunk = JSON.parse(data) as Chunk;
          if (chunk.error) throw new MakinaError("runtime_unavailable", `The runtime failed: ${chunk.error.message ?? "unknown error"}`);
          if (chunk.usage) {
            reported = true;
            promptTokens = chunk.usage.prompt_tokens ?? promptTokens;
            completionTokens = chunk.usage.completion_tokens ?? completionTokens;
          }
          const choice = chunk.choices?.[0];
          const text = choice?.delta?.content;
          if (text) {
            if (!chunk.usage && !reported) completionTokens++;
            yield { type: "text", text };
          }
          for (const c of choice?.delta?.tool_calls ?? []) {
            if (!chunk.usage && !reported) completionTokens++;
            yield toolCallEvent(c, c.index ?? 0);
          }
          if (choice?.finish_reason) finish = choice.finish_reason;
        }
      }
    } catch (err) {
      // Canceled or failed midway: what the server said it used, or the pieces that came.
      yield stoppedBy(err, { promptTokens, completionTokens }, signal);
      return;
    } finally {
      // A body read to its end gives its connection back to the pool; one left midway closes it.
      if (!res.complete) res.destroy();
    }
    yield { type: "end", finishReason: finish === "length" || finish === "tool_calls" ? finish : "stop", usage: { promptTokens, completionTokens } };
  }

  /** An embeddings request, passed to the server's `/embeddings` as the client sent it (vLLM serves it with a pooling model). */
  private async *embed(input: ChatInput, options: ChatOptions): AsyncGenerator<RuntimeEvent> {
    const body = { model: this.o.model, input: input.embed!.map((e) => (e.tokens.length ? e.tokens : e.text)), encoding_format: "float", ...(input.dimensions ? { dimensions: input.dimensions } : {}), ...this.priority(input) };
    const reply = await this.postForJson<{ data?: { index?: number; embedding?: unknown }[]; usage?: { prompt_tokens?: number } }>("embeddings", body, "embeddings", options.signal);
    // A server that says no usage is charged as the relay estimates: about 4 characters a token.
    const promptTokens = reply.usage?.prompt_tokens ?? input.embed!.reduce((n, e) => n + (e.tokens.length || Math.ceil(e.text.length / 4)), 0);
    const count = input.embed!.length;
    const vectors = new Array<number[] | undefined>(count);
    for (const [i, item] of (reply.data ?? []).entries()) {
      const index = item.index ?? i;
      if (Number.isInteger(index) && index >= 0 && index < count && Array.isArray(item.embedding) && item.embedding.every((v) => typeof v === "number")) vectors[index] = item.embedding as number[];
    }
    for (let index = 0; index < count; index++) {
      const values = vectors[index];
      if (!values) return yield stoppedBy(new MakinaError("runtime_unavailable", `The runtime's server answered no embedding for input ${index}.`, { retryAfterMs: 5000 }), { promptTokens, completionTokens: 0 });
      yield { type: "embedding", index, values };
    }
    yield { type: "end", finishReason: "stop", usage: { promptTokens, completionTokens: 0 } };
  }

  /**
   * A rerank request, passed to the server's `/rerank` (vLLM's and llama.cpp's server's) with every document and
   * no `top_n`: the relay sorts and cuts what the client asked for.
   */
  private async *rerank(input: ChatInput, options: ChatOptions): AsyncGenerator<RuntimeEvent> {
    const { query, documents } = input.rerank!;
    const body = { model: this.o.model, query, documents, ...this.priority(input) };
    const reply = await this.postForJson<{ results?: { index?: unknown; relevance_score?: unknown }[]; usage?: { prompt_tokens?: number; total_tokens?: number } }>("rerank", body, "rerank results", options.signal);
    // A server that says no usage is charged as the relay estimates: the query read with each document, about 4 characters a token.
    const promptTokens = reply.usage?.prompt_tokens ?? reply.usage?.total_tokens ?? documents.reduce((n, d) => n + Math.ceil((query.length + d.length) / 4), 0);
    const scores = new Array<number | undefined>(documents.length);
    for (const item of Array.isArray(reply.results) ? reply.results : []) {
      const { index, relevance_score: score } = item ?? {};
      if (typeof index === "number" && Number.isInteger(index) && index >= 0 && index < documents.length && typeof score === "number" && Number.isFinite(score)) scores[index] = score;
    }
    for (let index = 0; index < documents.length; index++) {
      const score = scores[index];
      if (score === undefined) return yield stoppedBy(new MakinaError("runtime_unavailable", `The runtime's server answered no score for document ${index}.`, { retryAfterMs: 5000 }), { promptTokens, completionTokens: 0 });
      yield { type: "score", index, score };
    }
    yield { type: "end", finishReason: "stop", usage: { promptTokens, completionTokens: 0 } };
  }

  /** Posts `body` to one of the server's routes and reads its JSON answer (`what` names it in a refusal). */
  private async postForJson<T>(path: string, body: unknown, what: string, signal: AbortSignal | undefined): Promise<T> {
    const res = await this.upstream.post(path, JSON.stringify(body), signal).catch((err: unknown) => {
      if (signal?.aborted) throw MakinaError.from(signal.reason);
      throw err instanceof MakinaError ? err : new MakinaError("runtime_unavailable", "The runtime's server is not reachable.", { cause: err, retryAfterMs: 5000 });
    });
    await refuseUnlessOk(res);
    try {
      return JSON.parse(await readText(res)) as T;
    } catch (err) {
      if (signal?.aborted) throw MakinaError.from(signal.reason);
      throw new MakinaError("runtime_unavailable", `The runtime's server answered ${what} that are not JSON.`, { cause: err, retryAfterMs: 5000 });
    }
  }

  private closed = false;

  async close(): Promise<void> {
    this.upstream.close();
    await this.o.supervisor?.stop();
    if (!this.closed) this.o.onClose?.();
    this.closed = true;
  }
}

/**
 * Reads the server's refusal, when its status is not 2xx, as the request's fault (400) or the runtime's (503):
 * what reaches the client of the server's words is one line of 300 characters at most.
 */
async function refuseUnlessOk(res: IncomingMessage): Promise<void> {
  const status = res.statusCode ?? 0;
  if (status >= 200 && status < 300) return;
  const text = await readText(res).catch(() => "");
  const message = ((): string => {
    try {
      return (JSON.parse(text) as Chunk).error?.message ?? text;
    } catch {
      return text;
    }
  })();
  const said = message.replace(/[\u0000-\u001f\u007f]+/g, " ").trim().slice(0, 300);
  if (status === 400 && /context|too long|maximum.*length/i.test(message)) throw new MakinaError("context_length_exceeded", said, { param: "messages" });
  // A request the server refuses (a schema its guided decoding cannot take, a parameter out of its range) is
  // the request's fault: 400, not a failure of the gateway.
  if (status === 400 || status === 422) throw new MakinaError("invalid_value", `The runtime refused the request: ${said}`);
  throw new MakinaError(status >= 500 ? "runtime_unavailable" : "internal_error", `The runtime answered ${status}: ${said}`, { retryAfterMs: status >= 500 ? 5000 : undefined });
}

/** `response_format` as an OpenAI-compatible server takes it: vLLM and the others enforce it themselves. */
function upstreamResponseFormat(format: ResponseFormat): Record<string, unknown> {
  if (format.type === "json_object") return { type: "json_object" };
  return { type: "json_schema", json_schema: { name: format.name, schema: JSON.parse(format.schemaJson) as unknown, strict: format.strict } };
}

/** A conversation with tool calls or images as OpenAI-compatible servers take it. */
function upstreamMessages(messages: ChatInput["messages"]): Record<string, unknown>[] {
  return messages.map((m) => {
    if (m.parts?.length) {
      const content = m.parts.map((p) =>
        p.type === "image_url" ? { type: "image_url", image_url: { url: p.imageUrl, ...(p.detail ? { detail: p.detail } : {}) } } : { type: "text", text: p.text },
      );
      return { role: m.role, content };
    }
    if (m.toolCallId) return { role: m.role, content: m.content, tool_call_id: m.toolCallId };
    if (m.toolCalls?.length) {
      return { role: m.role, content: m.content || null, tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })) };
    }
    return { role: m.role, content: m.content };
  });
}

/** `tools`, `tool_choice` and `parallel_tool_calls` as the client sent them: the server calls the tools itself. */
function upstreamTools(input: ChatInput): Record<string, unknown> {
  const tools = (input.tools ?? []).map((t) => ({
    type: "function",
    function: { name: t.name, ...(t.description ? { description: t.description } : {}), ...(t.parametersJson ? { parameters: JSON.parse(t.parametersJson) as unknown } : {}), ...(t.strict ? { strict: true } : {}) },
  }));
  const choice = input.toolChoice === "function" ? { type: "function", function: { name: input.toolChoiceFunction } } : input.toolChoice;
  return { tools, ...(choice ? { tool_choice: choice } : {}), ...(input.parallelToolCalls !== undefined ? { parallel_tool_calls: input.parallelToolCalls } : {}) };
}

/** A tool call (or a piece of one) from the server as the link's event. */
function toolCallEvent(c: UpstreamToolCall, index: number): RuntimeEvent {
  return { type: "toolCall", index, id: c.id ?? "", name: c.function?.name ?? "", arguments: c.function?.arguments ?? "" };
}
