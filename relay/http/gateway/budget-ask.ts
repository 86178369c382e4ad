import type { ChatInput } from "../../../proto/index.js";
import type { Admission, BudgetAsk } from "../../limits/index.js";

/** The completion a budgeted request without `max_tokens` reserves when its model's context is not known. */
const OPEN_COMPLETION = 4096;

/**
 * The most tokens a request's prompt can be, for its budgets: a token is at least a byte of its text, so the bytes
 * of every text the model reads (messages, tool calls, tools' names, descriptions and schemas), 64 tokens a message
 * and 64 more for its template, an image's at most 8,192; no more than the model's context, when it is known.
 */
function promptBound(input: ChatInput, contextSize: number | null): number {
  let bytes = 0;
  for (const m of input.messages) {
    bytes += Buffer.byteLength(m.content) + 64;
    if (m.toolCalls) for (const c of m.toolCalls) bytes += Buffer.byteLength(c.name) + Buffer.byteLength(c.arguments) + 16;
    if (m.parts) for (const p of m.parts) if (p.type === "image_url") bytes += 8192;
  }
  if (input.tools) for (const t of input.tools) bytes += Buffer.byteLength(t.name) + Buffer.byteLength(t.description) + Buffer.byteLength(t.parametersJson) + 64;
  // (A chat template may add a system prompt of its own: a few dozen tokens more.)
  bytes += 64;
  return contextSize === null ? bytes : Math.min(bytes, contextSize);
}

/**
 * What a budgeted key's request asks of its budgets: its prompt's bound and the completion it may make (its
 * `max_tokens`, else what its model's context leaves), for each step of an orchestrator; and at least its prompt
 * and one token. An embeddings or rerank request asks its inputs, whole.
 */
export function budgetAsk(input: ChatInput, contextSize: number | null, steps: number, estimatedTokens: number): BudgetAsk {
  if (input.embed?.length || input.rerank) return { want: estimatedTokens, least: estimatedTokens };
  const prompt = promptBound(input, contextSize);
  const completion = input.maxTokens > 0 ? input.maxTokens : contextSize !== null ? Math.max(1, contextSize - prompt) : OPEN_COMPLETION;
  return { want: steps * (prompt + completion), least: steps * (prompt + 1) };
}

/**
 * Holds a budgeted request to what its budgets granted: its completion is made no longer than the tokens reserved
 * for it leave after its prompt's bound (its `max_tokens` lowered, or set when it had none), so what it uses never
 * takes its budgets past what it reserved.
 */
export function holdToGrant(input: ChatInput, admission: Admission, steps: number, contextSize: number | null): void {
  if (admission.granted === undefined || input.embed?.length || input.rerank) return;
  const allowed = Math.max(1, Math.floor(admission.granted / steps) - promptBound(input, contextSize));
  if (input.maxTokens <= 0 || allowed < input.maxTokens) input.maxTokens = allowed;
}
