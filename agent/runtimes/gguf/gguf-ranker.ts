import type { LlamaModel, LlamaRankingContext } from "node-llama-cpp";
import { MakinaError } from "../../../proto/index.js";
import type { ChatInput, RuntimeEvent } from "../model-runtime.js";
import type { ModelWork } from "./model-work.js";
import { SideContext } from "./side-context.js";

/** The most tokens of context the ranking context holds (a query and one document at a time: kept small). */
const RANK_CONTEXT = 8192;

/**
 * A reranker model's scores: from node-llama-cpp's ranking context (a context of its own, made on the first rerank
 * request), which reads the query with each document and answers the probability that the document is relevant.
 */
export class GgufRanker {
  private readonly context: SideContext<LlamaRankingContext>;
  private readonly contextSize: number;

  constructor(
    private readonly model: LlamaModel,
    work: ModelWork,
    chatContextSize: number,
    threads: number,
  ) {
    this.contextSize = Math.min(chatContextSize, RANK_CONTEXT);
    this.context = new SideContext(work, () => model.createRankingContext({ contextSize: this.contextSize, threads }), "ranking");
  }

  /** Whether the model ranks: a classification head, as node-llama-cpp's ranking context needs. */
  get ranks(): boolean {
    return this.model.fileInsights.supportsRanking;
  }

  /**
   * A rerank request: each document's score, in order, one event each, so the reader's pace and a cancellation hold
   * between documents. Every document is checked against the context before the first is scored.
   */
  async *rank(input: ChatInput, signal: AbortSignal): AsyncGenerator<RuntimeEvent> {
    if (!this.ranks) throw new MakinaError("unsupported_parameter", "This stack's model does not rank documents: a reranker (a model with a classification head, such as bge-reranker or Qwen3-Reranker) answers /v1/rerank.", { param: "model" });
    const { documents } = input.rerank!;
    const ranker = await this.context.get();
    // The query tokenized once (node-llama-cpp would for each document), and refused before any document when it
    // alone leaves no room.
    const query = this.model.tokenize(input.rerank!.query, false, "trimLeadingSpace");
    if (query.length >= this.contextSize) throw new MakinaError("context_length_exceeded", `This model ranks at most ${this.contextSize - 1} tokens of the query and a document together, but the query alone has ${query.length}. Please shorten it.`, { param: "query" });
    const lengths = documents.map((d) => ranker.calculateInputLength(query, d));
    lengths.forEach((n, i) => {
      if (n >= this.contextSize) throw new MakinaError("context_length_exceeded", `This model ranks at most ${this.contextSize - 1} tokens of the query and a document together, but the query and 'documents[${i}]' have ${n}. Please shorten them.`, { param: `documents[${i}]` });
    });
    const promptTokens = lengths.reduce((a, b) => a + b, 0);
    yield* this.context.each(documents, signal, promptTokens, async (document, index) => ({ type: "score", index, score: await ranker.rank(query, document) }));
  }

  dispose(): Promise<void> {
    return this.context.dispose();
  }
}
