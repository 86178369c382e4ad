import type { RuntimeKind } from "../store/index.js";

/**
 * The request parameters (beyond the basics every runtime honours: messages,
 * temperature, top_p, max_tokens, stop, seed, stream) that each runtime kind
 * honours. A request using another one with a non-neutral value is refused
 * with 400 `unsupported_parameter`; nothing is dropped silently.
 */
export const RUNTIME_CAPABILITIES: Readonly<Record<RuntimeKind, ReadonlySet<string>>> = {
  gguf: new Set(["presence_penalty", "frequency_penalty"]),
  vllm: new Set(["presence_penalty", "frequency_penalty"]),
  mlx: new Set([]),
  openai: new Set(["presence_penalty", "frequency_penalty"]),
};
