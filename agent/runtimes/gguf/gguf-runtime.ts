import { LlamaChat, type ChatHistoryItem, type Llama, type LlamaContext, type LlamaModel } from "node-llama-cpp";
import { MakinaError, type ChatMessage } from "../../../proto/index.js";
import type { ChatInput, ChatOptions, ModelRuntime, RuntimeEvent } from "../model-runtime.js";
import { SlotPool } from "../slot-pool.js";
import { ResponseGrammars } from "./json-schema-grammar.js";
import { paceEvaluation } from "./pace-evaluation.js";

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
export async function loadGgufModel(llama: Llama, modelPath: string, options: GgufLoadOptions): Promise<GgufRuntime> {
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

/** Text chunks decoded ahead of the reader before a sequence pauses its decoding. */
const READ_AHEAD = 4;

/** A context sequence with its chat, and what its decoding waits for before each next token. */
interface Slot {
  chat: LlamaChat;
  beforeNextToken: (() => Promise<void> | undefined) | undefined;
  /** True while its decoding waits for the reader to take text. */
  paused: boolean;
}

/** A GGUF model loaded in this process, serving requests from a pool of context sequences. */
export class GgufRuntime implements ModelRuntime {
  private readonly slots: SlotPool<Slot>;
  private readonly all: Slot[] = [];
  private closed = false;
  private readonly grammars: ResponseGrammars;
  readonly contextSize: number;
  readonly endpoint = "in-process";

  constructor(
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
  ) {
    this.contextSize = context.contextSize;
    this.grammars = new ResponseGrammars(model.llama);
    // Resolving the chat wrapper (rendering the model's Jinja template) is synchronous and
    // costs about a second: do it once per model and share it between sequences.
    let chatWrapper: LlamaChat["chatWrapper"] | undefined;
    const slots: Slot[] = [];
    for (let i = 0; i < context.totalSequences; i++) {
      const sequence = context.getSequence();
      const slot: Slot = { chat: new LlamaChat({ contextSequence: sequence, chatWrapper }), beforeNextToken: undefined, paused: false };
      chatWrapper ??= slot.chat.chatWrapper;
      paceEvaluation(sequence, () => slot.beforeNextToken?.());
      slots.push(slot);
    }
    this.all = slots;
    this.slots = new SlotPool(slots);
  }

  /** Requests whose decoding is paused because their reader has not taken the text decoded so far. */
  get pausedRequests(): number {
    return this.all.filter((s) => s.paused).length;
  }

  async *chat(input: ChatInput, options: ChatOptions = {}): AsyncGenerator<RuntimeEvent> {
    if (this.closed) throw new MakinaError("runtime_unavailable", "The model is being unloaded.", { retryAfterMs: 1000 });
    const slot = await this.slots.acquire(options.signal);
    const { chat } = slot;
    const stop = new AbortController();
    // Text decoded but not yet taken by the reader. Decoding pauses while READ_AHEAD chunks wait,
    // so a reader that stops reading (a slow client, no credit) stops the decoder too.
    const pending: string[] = [];
    let wakeDecoder: (() => void) | undefined;
    const resumeDecoder = () => {
      const wake = wakeDecoder;
      wakeDecoder = undefined;
      slot.paused = false;
      wake?.();
    };
    slot.beforeNextToken = () => {
      if (pending.length < READ_AHEAD || stop.signal.aborted) return undefined;
      slot.paused = true;
      return new Promise<void>((resolve) => (wakeDecoder = resolve));
    };
    const onAbort = () => {
      stop.abort();
      resumeDecoder();
    };
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
      // A response format holds the model to JSON (or a schema) token by token: the answer cannot be anything else.
      const grammar = input.responseFormat ? await this.grammars.for(input.responseFormat) : undefined;
      let completionTokens = 0;
      let outcome: { stopReason: string } | undefined;
      let failure: unknown;
      let wakeReader: (() => void) | undefined;
      generation = chat
        .generateResponse(history, {
          maxTokens: input.maxTokens || room,
          temperature: input.temperature,
          topP: input.topP,
          seed: input.seed,
          repeatPenalty:
            input.presencePenalty || input.frequencyPenalty ? { penalty: 1, presencePenalty: input.presencePenalty, frequencyPenalty: input.frequencyPenalty } : false,
          customStopTriggers: input.stop.length ? input.stop : undefined,
          grammar,
          signal: stop.signal,
          stopOnAbortSignal: true,
          onToken: (tokens) => {
            completionTokens += tokens.length;
            if (options.usage) options.usage.completionTokens = completionTokens;
          },
          onTextChunk: (text) => {
            pending.push(text);
            wakeReader?.();
          },
        })
        .then(
          (r) => {
            outcome = r.metadata;
            wakeReader?.();
          },
          (err: unknown) => {
            failure = err;
            wakeReader?.();
          },
        );
      for (;;) {
        if (pending.length) {
          const text = pending.splice(0).join("");
          resumeDecoder();
          yield { type: "text", text };
          continue;
        }
        if (failure !== undefined) throw MakinaError.from(failure);
        if (outcome) break;
        await new Promise<void>((resolve) => (wakeReader = resolve));
        wakeReader = undefined;
      }
      if (options.signal?.aborted) throw MakinaError.from(options.signal.reason);
      yield { type: "end", finishReason: outcome.stopReason === "maxTokens" ? "length" : "stop", usage: { promptTokens, completionTokens } };
    } finally {
      options.signal?.removeEventListener("abort", onAbort);
      stop.abort();
      resumeDecoder();
      // The sequence is handed to the next request only once this generation has fully stopped.
      await generation;
      slot.beforeNextToken = undefined;
      this.slots.release(slot);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.context.dispose();
    await this.model.dispose();
  }
}
