import type { LlamaEmbeddingContext, LlamaModel, Token } from "node-llama-cpp";
import { MAX_EMBED_NUMBERS, MakinaError } from "../../../proto/index.js";
import type { ChatInput, RuntimeEvent } from "../model-runtime.js";
import type { ModelWork } from "./model-work.js";
import { SideContext } from "./side-context.js";

/** The most tokens of context the embedding context holds (a second context beside the chat one: kept small). */
const EMBED_CONTEXT = 8192;

/** A loaded model's embeddings: from an embedding context of its own, made on the first embeddings request. */
export class GgufEmbedder {
  private readonly context: SideContext<LlamaEmbeddingContext>;
  private readonly contextSize: number;

  constructor(
    private readonly model: LlamaModel,
    work: ModelWork,
    chatContextSize: number,
    threads: number,
  ) {
    this.contextSize = Math.min(chatContextSize, EMBED_CONTEXT);
    this.context = new SideContext(work, () => model.createEmbeddingContext({ contextSize: this.contextSize, threads }), "embedding");
  }

  /**
   * An embeddings request: each input's vector (scaled to unit length as the vendor's are), in order, one event
   * each, so the reader's pace and a cancellation hold between inputs. Every input is checked before the first is
   * evaluated: a token id past the vocabulary, an input longer than the context, or a `dimensions` other than the
   * model's own is refused with the input or parameter named.
   */
  async *embed(input: ChatInput, signal: AbortSignal): AsyncGenerator<RuntimeEvent> {
    const size = this.model.embeddingVectorSize;
    if (input.dimensions && input.dimensions !== size) {
      throw new MakinaError("unsupported_parameter", `This model's embeddings have ${size} dimensions and cannot be shortened: leave 'dimensions' out or set it to ${size}.`, { param: "dimensions" });
    }
    if (input.embed!.length * size > MAX_EMBED_NUMBERS) {
      throw new MakinaError("request_too_large", `The vectors of ${input.embed!.length} inputs of this model (${size} numbers each) would hold more than ${MAX_EMBED_NUMBERS} numbers: send fewer inputs in each request.`, { param: "input" });
    }
    const vocabulary = vocabularySize(this.model);
    const embedder = await this.context.get();
    const inputs = input.embed!.map((e, i): Token[] | string => {
      if (!e.tokens.length) return e.text;
      const bad = e.tokens.find((t) => t >= vocabulary);
      if (bad !== undefined) throw new MakinaError("invalid_value", `Invalid 'input[${i}]': token ${bad} is not in this model's vocabulary of ${vocabulary} tokens.`, { param: `input[${i}]` });
      return e.tokens as Token[];
    });
    const lengths = inputs.map((x) => embedder.calculateInputLength(x));
    lengths.forEach((n, i) => {
      if (n >= this.contextSize) throw new MakinaError("context_length_exceeded", `This model's embeddings take at most ${this.contextSize - 1} tokens an input, but 'input[${i}]' has ${n}. Please shorten it.`, { param: `input[${i}]` });
    });
    const promptTokens = lengths.reduce((a, b) => a + b, 0);
    yield* this.context.each(inputs, signal, promptTokens, async (x, index) => {
      const { vector } = await embedder.getEmbeddingFor(x);
      const norm = Math.hypot(...vector) || 1;
      return { type: "embedding", index, values: vector.map((v) => v / norm) };
    });
  }

  dispose(): Promise<void> {
    return this.context.dispose();
  }
}

/** How many tokens the model's vocabulary has (token ids are below it), from its file's metadata. */
function vocabularySize(model: LlamaModel): number {
  const tokens = (model.fileInfo.metadata as unknown as { tokenizer?: { ggml?: { tokens?: unknown[] } } }).tokenizer?.ggml?.tokens;
  return Array.isArray(tokens) ? tokens.length : 2 ** 32;
}
