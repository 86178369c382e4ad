import { MakinaError, type ResponseFormat } from "../../../proto/index.js";
import type { ProcessSupervisor } from "../../supervisor/index.js";
import type { ChatInput, ChatOptions, ModelRuntime, RuntimeEvent } from "../model-runtime.js";
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
}

interface Chunk {
  choices?: { delta?: { content?: string | null }; message?: { content?: string | null }; finish_reason?: string | null }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
  error?: { message?: string };
}

/**
 * A model served by an OpenAI-compatible HTTP server on this machine (vLLM,
 * mlx_lm.server, llama-server, Ollama, LM Studio…), over a pool of keep-alive
 * connections. A streamed request is forwarded as a stream, a non-streamed one
 * in one piece; aborting the signal aborts the HTTP request, which stops the server.
 */
export class OpenAiServerRuntime implements ModelRuntime {
  readonly contextSize: number;
  readonly endpoint: string;
  private readonly upstream: UpstreamClient;

  get pid(): number | undefined {
    return this.o.supervisor?.pid;
  }

  constructor(private readonly o: OpenAiServerOptions) {
    this.contextSize = o.contextSize;
    this.endpoint = o.baseUrl;
    this.upstream = new UpstreamClient(o.baseUrl);
  }

  async *chat(input: ChatInput, options: ChatOptions = {}): AsyncGenerator<RuntimeEvent> {
    if (this.o.supervisor && this.o.supervisor.state !== "ready") {
      throw new MakinaError("runtime_unavailable", `The runtime is ${this.o.supervisor.state}.`, { retryAfterMs: 5000 });
    }
    const body = {
      model: this.o.model,
      messages: input.messages,
      temperature: input.temperature,
      top_p: input.topP,
      ...(input.maxTokens ? { max_tokens: input.maxTokens } : {}),
      ...(input.stop.length ? { stop: input.stop } : {}),
      ...(input.seed !== undefined ? { seed: input.seed } : {}),
      ...(input.presencePenalty ? { presence_penalty: input.presencePenalty } : {}),
      ...(input.frequencyPenalty ? { frequency_penalty: input.frequencyPenalty } : {}),
      ...(input.responseFormat ? { response_format: upstreamResponseFormat(input.responseFormat) } : {}),
      stream: input.stream,
      ...(input.stream ? { stream_options: { include_usage: true, ...(this.o.continuousUsage ? { continuous_usage_stats: true } : {}) } } : {}),
    };
    const { signal } = options;
    const fail = (err: unknown): never => {
      if (signal?.aborted) throw MakinaError.from(signal.reason);
      throw err instanceof MakinaError ? err : new MakinaError("runtime_unavailable", "The runtime's server is not reachable.", { cause: err, retryAfterMs: 5000 });
    };
    const res = await this.upstream.post("chat/completions", JSON.stringify(body), signal).catch(fail);
    const status = res.statusCode ?? 0;
    if (status < 200 || status >= 300) {
      const text = await readText(res).catch(() => "");
      const message = ((): string => {
        try {
          return (JSON.parse(text) as Chunk).error?.message ?? text;
        } catch {
          return text;
        }
      })();
      if (status === 400 && /context|too long|maximum.*length/i.test(message)) throw new MakinaError("context_length_exceeded", message, { param: "messages" });
      throw new MakinaError(status >= 500 ? "runtime_unavailable" : "internal_error", `The runtime answered ${status}: ${message.slice(0, 500)}`, { retryAfterMs: status >= 500 ? 5000 : undefined });
    }
    let promptTokens = 0;
    let completionTokens = 0;
    let finish = "stop";
    try {
      if (!input.stream) {
        const reply = JSON.parse(await readText(res)) as Chunk;
        if (reply.error) throw new MakinaError("runtime_unavailable", `The runtime failed: ${reply.error.message ?? "unknown error"}`);
        const choice = reply.choices?.[0];
        const text = choice?.message?.content ?? "";
        promptTokens = reply.usage?.prompt_tokens ?? 0;
        completionTokens = reply.usage?.completion_tokens ?? (text ? 1 : 0);
        finish = choice?.finish_reason ?? "stop";
        if (options.usage) Object.assign(options.usage, { promptTokens, completionTokens });
        if (text) yield { type: "text", text };
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
            if (options.usage) Object.assign(options.usage, { promptTokens, completionTokens });
            yield { type: "text", text };
          }
          if (choice?.finish_reason) finish = choice.finish_reason;
        }
      }
    } catch (err) {
      if (signal?.aborted) throw MakinaError.from(signal.reason);
      throw err instanceof MakinaError ? err : MakinaError.from(err);
    } finally {
      // A body read to its end gives its connection back to the pool; one left midway closes it.
      if (!res.complete) res.destroy();
    }
    if (options.usage) Object.assign(options.usage, { promptTokens, completionTokens });
    yield { type: "end", finishReason: finish === "length" ? "length" : "stop", usage: { promptTokens, completionTokens } };
  }

  private closed = false;

  async close(): Promise<void> {
    this.upstream.close();
    await this.o.supervisor?.stop();
    if (!this.closed) this.o.onClose?.();
    this.closed = true;
  }
}

/** `response_format` as an OpenAI-compatible server takes it: vLLM and the others enforce it themselves. */
function upstreamResponseFormat(format: ResponseFormat): Record<string, unknown> {
  if (format.type === "json_object") return { type: "json_object" };
  return { type: "json_schema", json_schema: { name: format.name, schema: JSON.parse(format.schemaJson) as unknown, strict: format.strict } };
}
