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
  // GGUF enforces response_format with a grammar made from the JSON schema; vLLM and OpenAI-compatible servers take it as is.
  gguf: ["presence_penalty", "frequency_penalty", "response_format"],
  vllm: ["presence_penalty", "frequency_penalty", "response_format"],
  mlx: [],
  openai: ["presence_penalty", "frequency_penalty", "response_format"],
});

/** Harness kinds a stack can name (prompt routing / tool wrapper layers). */
export const HARNESS_KINDS = ["system-prompt", "tools", "router"] as const;
/** Orchestrator kinds a stack can name (multi-step layers). */
export const ORCHESTRATOR_KINDS = ["refine", "vote"] as const;

/**
 * The optional layers each runtime kind can run today. Read by the relay's
 * compatibility rules (the Forge and stack create/deploy), so a stack naming a
 * layer its runtime cannot run is refused with the reason rather than deployed
 * without it. The `system-prompt` harness wraps any runtime (it runs on the
 * agent, in front of it); the `router` harness runs on the relay, which alone
 * sees the organization's other models; the other layers are not built yet.
 */
export const RUNTIME_LAYERS: Readonly<Record<RuntimeKind, { harness: readonly string[]; orchestrator: readonly string[] }>> = Object.freeze({
  gguf: { harness: ["system-prompt", "router"], orchestrator: [] },
  vllm: { harness: ["system-prompt", "router"], orchestrator: [] },
  mlx: { harness: ["system-prompt", "router"], orchestrator: [] },
  openai: { harness: ["system-prompt", "router"], orchestrator: [] },
});
