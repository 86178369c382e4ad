/** Runtime kinds a stack can use. */
export type RuntimeKind = "gguf" | "vllm" | "mlx" | "openai";

/**
 * The request parameters (beyond the basics every runtime honours: messages,
 * temperature, top_p, max_tokens, stop, seed, stream) that each runtime kind
 * honours. Shared by both sides: the agent's adapters pass them on, and the
 * relay refuses a request using another one with a non-neutral value with 400
 * `unsupported_parameter`, so nothing is dropped silently.
 */
export const RUNTIME_CAPABILITIES: Readonly<Record<RuntimeKind, readonly string[]>> = Object.freeze({
  gguf: ["presence_penalty", "frequency_penalty"],
  vllm: ["presence_penalty", "frequency_penalty"],
  mlx: [],
  openai: ["presence_penalty", "frequency_penalty"],
});
