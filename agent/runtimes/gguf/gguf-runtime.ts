import { LlamaChat, type ChatHistoryItem, type ChatModelFunctions, type ChatModelResponse, type Llama, type LlamaContext, type LlamaModel, type Token } from "node-llama-cpp";
import { isEmbeddingModel, isServiceTier, MakinaError, runtimeOverheadBytes, type ChatMessage } from "../../../proto/index.js";
import { stoppedBy, type ChatInput, type ChatOptions, type ModelRuntime, type RuntimeEvent } from "../model-runtime.js";
import { SlotPool } from "../slot-pool.js";
import { forcedCallWrapper } from "./forced-call-wrapper.js";
import { GgufEmbedder } from "./gguf-embedder.js";
import { GgufRanker } from "./gguf-ranker.js";
import { mergePieces } from "./merge-pieces.js";
import { ResponseGrammars } from "./json-schema-grammar.js";
import { paceEvaluation } from "./pace-evaluation.js";
import { ModelWork } from "./model-work.js";
import { promptCacheMeter, readAhead, sequenceFit, type Slot } from "./sequence-slot.js";
import { ToolCallPieces } from "./tool-call-pieces.js";
import { ToolFunctions } from "./tool-functions.js";

/** Options of {@link loadGgufModel}. */
export interface GgufLoadOptions {
  /** Upper bound of the context per sequence, tokens; the model's trained context caps it too. */
  maxContextSize: number;
  /** Requests served at once (context sequences). */
  sequences: number;
  /** Inference threads. */
  threads: number;
  signal?: AbortSignal;
  /**
   * Which free sequence a request takes: the one that holds most of its prompt (the default), or the one freed last
   * (before prompts were matched; kept for the benchmark that compares them, scripts/bench/service-tiers.mjs).
   */
  sequenceChoice?: "held-prefix" | "last-freed";
}

/**
 * Maps OpenAI roles onto node-llama-cpp's chat history; the model's own chat template renders it. An
 * assistant message's tool calls become function calls with their results (the `tool` messages that answer
 * them), and what the assistant says after the results continues the same model turn, as node-llama-cpp
 * keeps a conversation with function calls. When the conversation ends with tool results, the answer
 * continues that turn.
 */
export function toChatHistory(messages: ChatMessage[]): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = [];
  const results = new Map<string, string>();
  for (const m of messages) if (m.role === "tool" && m.toolCallId) results.set(m.toolCallId, m.content);
  // A model turn that made calls: the assistant's next words (after the tool messages) continue it.
  let open: ChatModelResponse | undefined;
  for (const m of messages) {
    if (m.role === "tool") continue;
    if (m.role === "assistant") {
      const response: ChatModelResponse["response"] = m.content ? [m.content] : [];
      for (const c of m.toolCalls ?? []) response.push({ type: "functionCall", name: c.name, params: JSON.parse(c.arguments) as unknown, result: results.get(c.id) ?? "" });
      if (open) open.response.push(...response);
      else history.push((open = { type: "model", response }));
      if (!m.toolCalls?.length) open = undefined;
      continue;
    }
    open = undefined;
    if (m.parts?.some((p) => p.type === "image_url")) throw new MakinaError("unsupported_parameter", "Image parts are not supported by the GGUF runtime.", { param: "messages" });
    if (m.role === "system" || m.role === "developer") history.push({ type: "system", text: m.content });
    else history.push({ type: "user", text: m.content });
  }
  if (!open) history.push({ type: "model", response: [] });
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
  return new GgufRuntime(model, context, options.threads, options.sequenceChoice === "last-freed");
}

/** The batch priority of a request's tokens by its tier, when the context's batch is full (node-llama-cpp: 5 first). */
const EVALUATION_PRIORITY = { priority: 5, default: 4, flex: 3 } as const;

/** Errors node-llama-cpp throws when a function call it generated does not hold to its schema. */
const CALL_VALIDATION_ERRORS = new Set(["LlamaFunctionCallValidationError", "LlamaJsonSchemaValidationError"]);

/** A GGUF model loaded in this process, serving requests from a pool of context sequences. */
export class GgufRuntime implements ModelRuntime {
  private readonly slots: SlotPool<Slot>;
  private readonly all: Slot[] = [];
  /** What requests run on the model and its contexts (generations, embeddings, scores): {@link close} stops it and waits for it. */
  private readonly work = new ModelWork();
  private closing: Promise<void> | undefined;
  private readonly grammars: ResponseGrammars;
  private readonly toolFunctions: ToolFunctions;
  readonly contextSize: number;
  readonly endpoint = "in-process";
  /** The model's embeddings and a reranker's scores, each from a context of its own made on the first request that needs it. */
  private readonly embedder: GgufEmbedder;
  private readonly ranker: GgufRanker;
  /** An embedding model (an encoder, or one with a pooling type): it answers embeddings, and refuses chats. */
  readonly embeddingModel: boolean;
  /** A reranker (a classification head): it answers rerank requests only. */
  readonly rankingModel: boolean;

  constructor(
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    private readonly threads = 1,
    /** Hand the sequence freed last, whatever it holds (see {@link GgufLoadOptions.sequenceChoice}). */
    private readonly lastFreed = false,
  ) {
    this.contextSize = context.contextSize;
    this.embedder = new GgufEmbedder(model, this.work, context.contextSize, threads);
    this.ranker = new GgufRanker(model, this.work, context.contextSize, threads);
    this.rankingModel = this.ranker.ranks;
    this.embeddingModel = !this.rankingModel && isEmbeddingModel(model.fileInfo.metadata);
    this.grammars = new ResponseGrammars(model.llama);
    this.toolFunctions = new ToolFunctions(model.llama);
    // Resolving the chat wrapper (rendering the model's Jinja template) is synchronous and
    // costs about a second: do it once per model and share it between sequences.
    let chatWrapper: LlamaChat["chatWrapper"] | undefined;
    let forcedWrapper: LlamaChat["chatWrapper"] | undefined;
    const slots: Slot[] = [];
    for (let i = 0; i < context.totalSequences; i++) {
      const sequence = context.getSequence();
      const chat = new LlamaChat({ contextSequence: sequence, chatWrapper });
      chatWrapper ??= chat.chatWrapper;
      forcedWrapper ??= forcedCallWrapper(chatWrapper);
      const slot: Slot = { sequence, chat, forcedCallChat: new LlamaChat({ contextSequence: sequence, chatWrapper: forcedWrapper }), beforeNextToken: undefined, generated: undefined, paused: false };
      paceEvaluation(sequence, { beforeNextToken: () => slot.beforeNextToken?.(), generated: () => slot.generated?.() });
      slots.push(slot);
    }
    this.all = slots;
    this.slots = new SlotPool(slots);
  }

  /** What node-llama-cpp says the model and its context hold in memory, with the runtime's own (as estimated) beside them. */
  get memoryBytes(): number {
    return this.model.size + this.context.stateSize + runtimeOverheadBytes(this.model.size);
  }

  /** Requests whose decoding is paused because their reader has not taken the text decoded so far. */
  get pausedRequests(): number {
    return this.all.filter((s) => s.paused).length;
  }

  /** The functions the model may call for this request, or undefined when it may call none. */
  private async functionsFor(input: ChatInput): Promise<ChatModelFunctions | undefined> {
    if (!input.tools?.length || input.toolChoice === "none") return undefined;
    if (input.responseFormat) {
      throw new MakinaError("unsupported_parameter", "The GGUF runtime cannot hold an answer to a response format while it may call tools: send one of them, or a tool choice of none.", { param: "response_format" });
    }
    return this.toolFunctions.for(input.tools, input.toolChoice === "function" ? input.toolChoiceFunction : undefined);
  }

  async *chat(input: ChatInput, options: ChatOptions = {}): AsyncGenerator<RuntimeEvent> {
    this.work.check();
    // Canceled by its caller, or stopped by the model's unload.
    const { signal, release } = this.work.join(options.signal);
    try {
      if (input.rerank) yield* this.ranker.rank(input, signal);
      else if (this.rankingModel) throw new MakinaError("unsupported_parameter", `This stack's model is a reranker: it answers rerank requests (/v1/rerank), not ${input.embed?.length ? "embeddings" : "chats"}.`, { param: "model" });
      else if (input.embed?.length) yield* this.embedder.embed(input, signal);
      else if (this.embeddingModel) throw new MakinaError("unsupported_parameter", "This stack's model is an embedding model: it answers embeddings (/v1/embeddings), not chats.", { param: "model" });
      else if (input.countOnly) yield* this.count(input, signal);
      else yield* this.generate(input, signal);
    } finally {
      release();
    }
  }

  /** A chat's answer, generated on the free sequence that suits its prompt best; `signal`: canceled, or the model unloads. */
  private async *generate(input: ChatInput, signal: AbortSignal): AsyncGenerator<RuntimeEvent> {
    // Checked before a sequence is taken: a refused request waits for nothing.
    const functions = await this.functionsFor(input);
    // The tokenizer is the model's: not read once its unload began.
    if (signal.aborted) throw MakinaError.from(signal.reason);
    const history = toChatHistory(input.messages);
    // The prompt as the model reads it: of the free sequences, the one that holds most of it evaluated serves it
    // (node-llama-cpp evaluates only the rest). Waiting, a request takes the sequence the next one leaves.
    const prompt = this.promptTokenList(this.all[0]!.chat, history, functions);
    const slot = await this.slots.acquire(signal, { tier: input.serviceTier, owner: input.fairShareKey }, this.lastFreed ? undefined : (s) => sequenceFit(s, prompt));
    const forced = functions !== undefined && (input.toolChoice === "required" || input.toolChoice === "function");
    const chat = forced ? slot.forcedCallChat : slot.chat;
    const stop = new AbortController();
    const { pending, resumeDecoder } = readAhead(slot, stop.signal);
    const onAbort = () => {
      stop.abort();
      resumeDecoder();
    };
    signal.addEventListener("abort", onAbort, { once: true });
    let generation: Promise<unknown> | undefined;
    // What the request used so far: its `end` says it, or its `stopped` when it is canceled or fails midway.
    const usage = { promptTokens: 0, completionTokens: 0, cachedTokens: 0 };
    const meter = promptCacheMeter(slot);
    try {
      const promptTokens = (usage.promptTokens = forced ? this.promptTokenList(chat, history, functions).length : prompt.length);
      const room = roomFor(this.contextSize, promptTokens, input.maxTokens);
      // A response format holds the model to JSON (or a schema) token by token: the answer cannot be anything else.
      const grammar = input.responseFormat ? await this.grammars.for(input.responseFormat) : undefined;
      const calls = new ToolCallPieces((ev) => pending.push(ev));
      let outcome: { stopReason: string } | undefined;
      let failure: unknown;
      let wakeReader: (() => void) | undefined;
      const countTokens = (n: number) => void (usage.completionTokens += n);
      // The tokens of the answer's text, or, when the model may call functions, every token it decodes (the
      // calls' words are no text of the answer).
      slot.generated = () => {
        meter.first();
        if (functions) countTokens(1);
      };
      const common = {
        maxTokens: input.maxTokens || room,
        temperature: input.temperature,
        topP: input.topP,
        seed: input.seed,
        evaluationPriority: EVALUATION_PRIORITY[isServiceTier(input.serviceTier) ? input.serviceTier : "default"],
        repeatPenalty: input.presencePenalty || input.frequencyPenalty ? { penalty: 1, presencePenalty: input.presencePenalty, frequencyPenalty: input.frequencyPenalty } : (false as const),
        customStopTriggers: input.stop.length ? input.stop : undefined,
        signal: stop.signal,
        stopOnAbortSignal: true,
        onToken: functions ? undefined : (tokens: readonly unknown[]) => countTokens(tokens.length),
        onTextChunk: (text: string) => {
          pending.push({ type: "text", text });
          wakeReader?.();
        },
      };
      // Not started once the model's unload began; one started before, the unload waits for.
      generation = this.work.use<{ metadata: { stopReason: string } }>(() =>
        functions
          ? chat.generateResponse(history, {
              ...common,
              functions,
              documentFunctionParams: true,
              ...(input.parallelToolCalls === false ? { maxParallelFunctionCalls: 1 } : {}),
              onFunctionCallParamsChunk: (c) => {
                calls.piece(c.callIndex, c.functionName, c.paramsChunk);
                wakeReader?.();
              },
              onFunctionCall: (c) => {
                calls.called(c.functionName, c.params);
                wakeReader?.();
              },
            })
          : chat.generateResponse(history, { ...common, grammar }),
      ).then(
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
          const events = mergePieces(pending.splice(0));
          resumeDecoder();
          yield* events;
          continue;
        }
        if (failure !== undefined) throw generationError(failure);
        if (outcome) break;
        await new Promise<void>((resolve) => (wakeReader = resolve));
        wakeReader = undefined;
      }
      // Stopped early (node-llama-cpp ends an aborted generation as a normal one): canceled, or the model unloads.
      if (signal.aborted) throw MakinaError.from(signal.reason);
      const finishReason = outcome.stopReason === "functionCalls" ? "tool_calls" : outcome.stopReason === "maxTokens" ? "length" : "stop";
      usage.cachedTokens = meter.cached(promptTokens);
      yield { type: "end", finishReason, usage: { ...usage } };
    } catch (err) {
      yield stoppedBy(err, usage, signal);
    } finally {
      signal.removeEventListener("abort", onAbort);
      stop.abort();
      resumeDecoder();
      // The sequence is handed to the next request only once this generation has fully stopped.
      await generation;
      slot.beforeNextToken = undefined;
      slot.generated = undefined;
      this.slots.release(slot);
    }
  }

  /** A request that only counts its prompt's tokens: as a chat would, the model's template over the messages and the functions it may call. */
  private async *count(input: ChatInput, signal: AbortSignal): AsyncGenerator<RuntimeEvent> {
    const functions = await this.functionsFor(input);
    if (signal.aborted) throw MakinaError.from(signal.reason);
    const promptTokens = this.promptTokenList(this.all[0]!.chat, toChatHistory(input.messages), functions).length;
    yield { type: "end", finishReason: "stop", usage: { promptTokens, completionTokens: 0 } };
  }

  /** The tokens of a conversation as the model's chat template renders it, with the functions it may call. */
  private promptTokenList(chat: LlamaChat, history: ChatHistoryItem[], functions: ChatModelFunctions | undefined): Token[] {
    return chat.chatWrapper.generateContextState({ chatHistory: history, ...(functions ? { availableFunctions: functions, documentFunctionParams: true } : {}) }).contextText.tokenize(this.model.tokenizer);
  }

  /**
   * Unloads the model: the requests running stop (they end `stopped`, canceled if their caller canceled them, else
   * `runtime_unavailable`), and once every generation, embedding and score under way has ended, the contexts and the
   * model are disposed, so that none touches them disposed. Requests waiting for a sequence are refused at once.
   * Idempotent: a second call resolves with the first.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.work.stop();
      // An embedding or ranking context that was never made (or failed) leaves nothing to give back; the model goes either way.
      await this.embedder.dispose();
      await this.ranker.dispose();
      await this.context.dispose();
      await this.model.dispose();
    })();
    return this.closing;
  }
}

/** The tokens left for the answer after the prompt; refused when the prompt and `maxTokens` do not fit. */
function roomFor(contextSize: number, promptTokens: number, maxTokens: number): number {
  const room = contextSize - promptTokens;
  if (room < 1 || maxTokens > room) {
    throw new MakinaError(
      "context_length_exceeded",
      `This model's maximum context length is ${contextSize} tokens. However, you requested ${promptTokens + (maxTokens || 1)} tokens (${promptTokens} in the messages, ${maxTokens || 1} in the completion). Please reduce the length of the messages or completion.`,
      { param: "messages" },
    );
  }
  return room;
}

/** A generation's failure as the request's error: a tool call that broke its function's schema says so. */
function generationError(failure: unknown): MakinaError {
  if (failure instanceof Error && CALL_VALIDATION_ERRORS.has(failure.constructor.name)) {
    return new MakinaError("internal_error", `The model's tool call did not hold to the function's schema: ${failure.message.slice(0, 300)}`, { cause: failure });
  }
  return MakinaError.from(failure);
}
