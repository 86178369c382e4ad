import type { ChatInput, Usage } from "../../proto/index.js";

/** Tokens a runtime may decode beyond what reached the relay before a cancel stops it (its read-ahead windows). */
const DECODED_AHEAD = 64;

/** What the relay itself saw of a request and its answer, to check the usage the agent reports against. */
export interface SeenAnswer {
  chunks: number;
  chars: number;
  bytes: number;
  promptChars: number;
  messages: number;
  maxTokens: number;
  steps: number;
  /** False for a request that generates nothing (embeddings, rerank, a token count): no completion tokens. @default true */
  generates?: boolean;
}

/** What the relay knows of a request before its answer: its prompt's characters (and its messages or inputs), its `max_tokens`, its steps. */
export function seenFor(input: ChatInput, steps: number): SeenAnswer {
  let promptChars = 0;
  for (const m of input.messages) {
    promptChars += m.content.length;
    if (m.toolCalls) for (const c of m.toolCalls) promptChars += c.name.length + c.arguments.length + 32;
    // An image costs a model a few hundred to a few thousand tokens, whatever its URL's length.
    if (m.parts) for (const p of m.parts) if (p.type === "image_url") promptChars += 8192;
  }
  // A runtime tells the model about the tools in the prompt.
  if (input.tools) for (const t of input.tools) promptChars += t.name.length + t.description.length + t.parametersJson.length + 256;
  // An embeddings request's inputs are its prompt: a token id is one token, a character at most one.
  if (input.embed) for (const e of input.embed) promptChars += e.text.length + e.tokens.length;
  // A rerank request's: the query read with each document.
  if (input.rerank) for (const d of input.rerank.documents) promptChars += input.rerank.query.length + d.length;
  const messages = input.messages.length + (input.embed?.length ?? 0) + (input.rerank?.documents.length ?? 0);
  const generates = !input.embed?.length && !input.rerank && !input.countOnly;
  return { chunks: 0, chars: 0, bytes: 0, promptChars, messages, maxTokens: input.maxTokens, steps, generates };
}

/**
 * The usage an agent reports, held to what the relay saw: no more completion tokens than `max_tokens` or
 * than the bytes of text and the chunks that arrived (each token brings a chunk or a byte; a chunk may carry
 * many tokens) plus the few a runtime may have decoded ahead of its credit when the request was canceled, no more prompt tokens than the
 * prompt's characters plus room for the chat template; for an orchestrated request, as much for each of its
 * steps. The same object when it holds.
 */
export function clampUsage(reported: Usage, seen: SeenAnswer): Usage {
  const whole = (n: number) => (Number.isFinite(n) && n > 0 ? Math.floor(n) : 0);
  // A request that generates nothing has no completion, whatever the agent says.
  let completion = seen.generates === false ? 0 : whole(reported.completionTokens);
  // The steps before an orchestrator's last are not seen here: only max_tokens holds each of them.
  if (seen.steps === 1) completion = Math.min(completion, seen.bytes + seen.chunks + DECODED_AHEAD);
  if (seen.maxTokens > 0) completion = Math.min(completion, seen.maxTokens * seen.steps);
  // A later step's prompt holds what the earlier steps wrote.
  const prompt = Math.min(whole(reported.promptTokens), seen.steps * (seen.promptChars + 32 * seen.messages + 1024) + (seen.steps > 1 ? completion : 0));
  return completion === reported.completionTokens && prompt === reported.promptTokens ? reported : { promptTokens: prompt, completionTokens: completion };
}
