import type { ChatInput } from "../../../proto/index.js";
import { estimateTokens, type Admission, type BudgetAsk } from "../../limits/index.js";

/** The completion a budgeted request without `max_tokens` reserves when its model's context is not known. */
const OPEN_COMPLETION = 4096;

/**
 * What a budgeted key's request asks of its budgets: its prompt's estimate and the completion it may make (its
 * `max_tokens`, else what its model's context leaves), for each step of an orchestrator; and at least its prompt
 * and one token. An embeddings request asks its inputs, whole.
 */
export function budgetAsk(input: ChatInput, contextSize: number | null, steps: number, estimatedTokens: number): BudgetAsk {
  if (input.embed?.length) return { want: estimatedTokens, least: estimatedTokens };
  const prompt = estimateTokens(input.messages, 0, 0);
  const completion = input.maxTokens > 0 ? input.maxTokens : contextSize !== null ? Math.max(1, contextSize - prompt) : OPEN_COMPLETION;
  return { want: steps * (prompt + completion), least: steps * (prompt + 1) };
}

/**
 * Holds a budgeted request to what its budgets granted: its completion is made no longer than the tokens reserved
 * for it leave after its prompt (its `max_tokens` lowered, or set when it had none), so the tokens it generates
 * never take its budgets past their limit.
 */
export function holdToGrant(input: ChatInput, admission: Admission, steps: number): void {
  if (admission.granted === undefined || input.embed?.length) return;
  const prompt = estimateTokens(input.messages, 0, 0);
  const allowed = Math.max(1, Math.floor(admission.granted / steps) - prompt);
  if (input.maxTokens <= 0 || allowed < input.maxTokens) input.maxTokens = allowed;
}
