import type { RuntimeKind } from "../../api/types.js";

/** The runtimes whose context a stack sets (the relay refuses it for the others, which size their own). */
export const SIZED_CONTEXT: readonly RuntimeKind[] = ["gguf", "vllm"];

/** The contexts the relay takes (its contract's MIN_CONTEXT and MAX_CONTEXT): the panel estimates only these. */
export const CONTEXT_RANGE = { min: 128, max: 1_048_576 } as const;
