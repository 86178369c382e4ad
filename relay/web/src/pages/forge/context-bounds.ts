import type { RuntimeKind } from "../../api/types.js";

/** The runtimes whose context a stack sets (the relay refuses it for the others, which size their own). */
export const SIZED_CONTEXT: readonly RuntimeKind[] = ["gguf", "vllm"];

/** The contexts the relay takes (its contract's MIN_CONTEXT and MAX_CONTEXT): the panel estimates only these. */
export const CONTEXT_RANGE = { min: 128, max: 1_048_576 } as const;

/** What is wrong with a context as typed, said before the form is sent; null when it is a context the relay takes, or empty. */
export function contextProblem(typed: string): string | null {
  const t = typed.trim();
  if (t === "") return null;
  const n = Number(t);
  if (/^\d+$/.test(t) && n >= CONTEXT_RANGE.min && n <= CONTEXT_RANGE.max) return null;
  return `A context is a whole number of tokens from ${CONTEXT_RANGE.min.toLocaleString("en-US")} to ${CONTEXT_RANGE.max.toLocaleString("en-US")}, or empty for the machine's default.`;
}
