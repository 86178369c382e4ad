import type { IncomingMessage, ServerResponse } from "node:http";
import type { FinishReason, Logger, MakinaError, ServiceTier, ToolCall, ToolCallDelta, Usage } from "../../../proto/index.js";
import type { PooledBase62 } from "../../ids/index.js";
import type { PlannableRequest } from "../../routing/index.js";

/** What names one answer: its id in the API's own form, when it was made, and the model that gave it. */
export interface AnswerMeta {
  id: string;
  /** Unix seconds. */
  created: number;
  model: string;
  /** The service tier that served it. */
  serviceTier: ServiceTier;
}

/** A whole answer, gathered from the token stream of a request that was not streamed. */
export interface CollectedAnswer {
  text: string;
  /** The answer's tool calls, in order; `arguments` is JSON text. */
  calls: ToolCall[];
  /** Of an embeddings request: the vector of each input, by its place. */
  vectors: number[][];
  /** Of a rerank request: the relevance of each document, by its place. */
  scores: number[];
  finishReason: FinishReason;
  usage: Usage;
}

/**
 * Turns one streamed answer into an API's server-sent events. Each method returns the frames to write, already
 * formatted (`data: …\n\n`, with `event: …` lines where the API names its events); "" writes nothing.
 */
export interface StreamEncoder {
  /** The frames that open the stream, sent with the headers once the machine's first event came. */
  open(): string;
  text(text: string): string;
  toolCall(delta: ToolCallDelta): string;
  /** The frames that close a complete answer. */
  end(finishReason: FinishReason, usage: Usage): string;
  /** The frames that tell the client its stream broke after the first byte: never a success marker. */
  failure(error: MakinaError): string;
}

/**
 * One API at the gateway's edge: how it names its key, how its body becomes the domain request the link
 * carries, and how the token events become its answer, its stream and its errors. Everything between (keys,
 * limits, routing, admission, the link, usage, the request log, metrics) is the gateway's one path
 * ({@link gatewayRoute}), the same for every API.
 */
export interface GatewayCodec<R extends PlannableRequest> {
  /** What the log calls one request, e.g. "chat completion". */
  readonly label: string;
  /** The API, as the request log keeps it: its path under `/v1` (`chat/completions`, `messages/count_tokens`). */
  readonly api: string;
  /** False for requests that use no tokens of the key's limits and usage (they count the request, not its tokens). @default true */
  readonly metered?: boolean;
  /** The request's key as an `Authorization` header value (`Bearer mk_live_…`), from wherever the API carries it. */
  authorization(req: IncomingMessage): string | undefined;
  /** Checks the body and makes it the domain request (`input` is what the stack's runtime gets); throws a `MakinaError` to refuse it. */
  decode(body: unknown): R;
  /** A new answer id in the API's form. */
  answerId(ids: PooledBase62): string;
  /** The body of a non-streamed answer. */
  answer(request: R, meta: AnswerMeta, answer: CollectedAnswer): unknown;
  /** The encoder of one streamed answer. */
  streamEncoder(request: R, meta: AnswerMeta): StreamEncoder;
  /** Answers an error in the API's own envelope and status, before the first byte (after it, cuts the connection); returns its code. */
  sendError(res: ServerResponse, err: unknown, log: Logger, requestId: string): string;
}
