import { LlamaChat, type ChatHistoryItem, type Llama, type LlamaContext, type LlamaModel } from "node-llama-cpp";
import { MakinaError, type ChatMessage } from "../../../proto/index.js";
import type { ChatInput, ChatOptions, ModelRuntime, RuntimeEvent } from "../model-runtime.js";
import { SlotPool } from "../slot-pool.js";

/** Options of {@link loadGgufModel}. */
export interface GgufLoadOptions {
  /** Upper bound of the context per sequence, tokens; the model's trained context caps it too. */
  maxContextSize: number;
  /** Requests served at once (context sequences). */
  sequences: number;
  /** Inference threads. */
  threads: number;
  signal?: AbortSignal;
}

/** Maps OpenAI roles onto node-llama-cpp's chat history; the model's own chat template renders it. */
export function toChatHistory(messages: ChatMessage[]): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = [];
  for (const m of messages) {
    if (m.role === "system" || m.role === "developer") history.push({ type: "system", text: m.content });
    else if (m.role === "assistant") history.push({ type: "model", response: [m.content] });
    else history.push({ type: "user", text: m.content });
  }
  history.push({ type: "model", response: [] });
  return history;
}

/** Loads a GGUF file with node-llama-cpp and serves chat requests from a pool of context sequences. */
export async function loadGgufModel(llama: Llama, modelPath: string, options: GgufLoadOptions): Promise<ModelRuntime> {
  const model = await llama.loadModel({ modelPath, loadSignal: options.signal });
  let context: LlamaContext;
  try {
    context = await model.createContext({
      contextSize: Math.min(model.trainContextSize, options.maxContextSize),
      sequences: options.sequences,
      threads: options.threads,
      createSignal: options.signal,
    });
  } catch (err) {
    await model.dispose();
    throw err;
  }
  return new GgufRuntime(model, context);
}

class GgufRuntime implements ModelRuntime {
  private readonly slots: SlotPool<LlamaChat>;
  private closed = false;
  readonly contextSize: number;
  readonly endpoint = "in-process";

  constructor(
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
  ) {
    this.contextSize = context.contextSize;
    // Resolving the chat wrapper (rendering the model's Jinja template) is synchronous and
    // costs about a second: do it once per model and share it between sequences.
    const first = new LlamaChat({ contextSequence: context.getSequence() });
    const chats: LlamaChat[] = [first];
    for (let i = 1; i < context.totalSequences; i++) chats.push(new LlamaChat({ contextSequence: context.getSequence(), chatWrapper: first.chatWrapper }));
    this.slots = new SlotPool(chats);
  }

  async *chat(input: ChatInput, options: ChatOptions = {}): AsyncGenerator<RuntimeEvent> {
    if (this.closed) throw new MakinaError("runtime_unavailable", "The model is being unloaded.", { retryAfterMs: 1000 });
    const chat = await this.slots.acquire(options.signal);
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    options.signal?.addEventListener("abort", onAbort, { once: true });
    let generation: Promise<unknown> | undefined;
    try {
      const history = toChatHistory(input.messages);
      const promptTokens = chat.chatWrapper.generateContextState({ chatHistory: history }).contextText.tokenize(this.model.tokenizer).length;
      if (options.usage) options.usage.promptTokens = promptTokens;
      const room = this.contextSize - promptTokens;
      if (room < 1 || input.maxTokens > room) {
        throw new MakinaError(
          "context_length_exceeded",
          `This model's maximum context length is ${this.contextSize} tokens. However, you requested ${promptTokens + (input.maxTokens || 1)} tokens (${promptTokens} in the messages, ${input.maxTokens || 1} in the completion). Please reduce the length of the messages or completion.`,
          { param: "messages" },
        );
      }
      // Text produced by node-llama-cpp's callbacks waits here until the consumer asks for it;
      // at most `maxTokens` tokens of text, which the context size bounds.
      const pending: string[] = [];
      let completionTokens = 0;
      let outcome: { stopReason: string } | undefined;
      let failure: unknown;
      let wake: (() => void) | undefined;
      generation = chat
        .generateResponse(history, {
          maxTokens: input.maxTokens || room,
          temperature: input.temperature,
          topP: input.topP,
          seed: input.seed,
          repeatPenalty:
            input.presencePenalty || input.frequencyPenalty ? { penalty: 1, presencePenalty: input.presencePenalty, frequencyPenalty: input.frequencyPenalty } : false,
          customStopTriggers: input.stop.length ? input.stop : undefined,
          signal: stop.signal,
          stopOnAbortSignal: true,
          onToken: (tokens) => {
            completionTokens += tokens.length;
            if (options.usage) options.usage.completionTokens = completionTokens;
          },
          onTextChunk: (text) => {
            pending.push(text);
            wake?.();
          },
        })
        .then(
          (r) => {
            outcome = r.metadata;
            wake?.();
          },
          (err: unknown) => {
            failure = err;
            wake?.();
          },
        );
      for (;;) {
        if (pending.length) {
          yield { type: "text", text: pending.splice(0).join("") };
          continue;
        }
        if (failure !== undefined) throw MakinaError.from(failure);
        if (outcome) break;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
      if (options.signal?.aborted) throw MakinaError.from(options.signal.reason);
      yield { type: "end", finishReason: outcome.stopReason === "maxTokens" ? "length" : "stop", promptTokens, completionTokens };
    } finally {
      options.signal?.removeEventListener("abort", onAbort);
      stop.abort();
      // The sequence is handed to the next request only once this generation has fully stopped.
      await generation;
      this.slots.release(chat);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.context.dispose();
    await this.model.dispose();
  }
}
