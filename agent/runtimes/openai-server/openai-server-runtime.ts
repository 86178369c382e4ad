import { MakinaError } from "../../../proto/index.js";
import type { ProcessSupervisor } from "../../supervisor/index.js";
import type { ChatInput, ChatOptions, ModelRuntime, RuntimeEvent } from "../model-runtime.js";

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
  fetchImpl?: typeof fetch;
}

/** Reads server-sent events' `data:` payloads from a response body. */
async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let i: number;
    while ((i = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const event = buffer.slice(0, i);
      buffer = buffer.slice(i).replace(/^\r?\n\r?\n/, "");
      const data = event
        .split(/\r?\n/)
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).trimStart())
        .join("\n");
      if (data) yield data;
    }
  }
}

interface Chunk {
  choices?: { delta?: { content?: string | null }; finish_reason?: string | null }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
  error?: { message?: string };
}

/**
 * A model served by an OpenAI-compatible HTTP server on this machine (vLLM,
 * mlx_lm.server, llama-server, Ollama, LM Studio…). Requests are forwarded as
 * streams; aborting the signal aborts the HTTP request, which stops the server.
 */
export class OpenAiServerRuntime implements ModelRuntime {
  readonly contextSize: number;
  readonly endpoint: string;

  get pid(): number | undefined {
    return this.o.supervisor?.pid;
  }

  constructor(private readonly o: OpenAiServerOptions) {
    this.contextSize = o.contextSize;
    this.endpoint = o.baseUrl;
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
      stream: true,
      stream_options: { include_usage: true, ...(this.o.continuousUsage ? { continuous_usage_stats: true } : {}) },
    };
    const res = await (this.o.fetchImpl ?? fetch)(`${this.o.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: options.signal,
    }).catch((err: unknown) => {
      throw options.signal?.aborted ? MakinaError.from(options.signal.reason) : new MakinaError("runtime_unavailable", "The runtime's server is not reachable.", { cause: err, retryAfterMs: 5000 });
    });
    if (!res.ok || !res.body) {
      const text = await res.text().catch(() => "");
      const message = ((): string => {
        try {
          return (JSON.parse(text) as Chunk).error?.message ?? text;
        } catch {
          return text;
        }
      })();
      if (res.status === 400 && /context|too long|maximum.*length/i.test(message)) throw new MakinaError("context_length_exceeded", message, { param: "messages" });
      throw new MakinaError(res.status >= 500 ? "runtime_unavailable" : "internal_error", `The runtime answered ${res.status}: ${message.slice(0, 500)}`, { retryAfterMs: res.status >= 500 ? 5000 : undefined });
    }
    let promptTokens = 0;
    let completionTokens = 0;
    let reported = false;
    let finish = "stop";
    for await (const data of sseData(res.body)) {
      if (data === "[DONE]") break;
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
    if (options.usage) Object.assign(options.usage, { promptTokens, completionTokens });
    yield { type: "end", finishReason: finish === "length" ? "length" : "stop", promptTokens, completionTokens };
  }

  private closed = false;

  async close(): Promise<void> {
    await this.o.supervisor?.stop();
    if (!this.closed) this.o.onClose?.();
    this.closed = true;
  }
}
