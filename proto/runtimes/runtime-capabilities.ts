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
  // GGUF enforces response_format with a grammar made from the JSON schema; vLLM and OpenAI-compatible servers
  // take it as is, and tools and image parts ("image_url") too: the agent passes them through, the server
  // calls the tools and reads the images (with a vision model; another answers with its own error).
  // "embeddings" (with "dimensions") are requests of /v1/embeddings: GGUF through node-llama-cpp's embedding
  // context (its own size only), vLLM (a pooling model) and OpenAI-compatible servers passed through; MLX's server
  // has no embeddings endpoint. "count_tokens" (Anthropic's) counts with the model's own tokenizer and chat
  // template, which only the GGUF runtime holds on the machine. "rerank" (/v1/rerank): GGUF through node-llama-cpp's
  // ranking context (a reranker model: one with a classification head), vLLM and OpenAI-compatible servers passed
  // through to their /rerank; MLX's server has none.
  gguf: ["presence_penalty", "frequency_penalty", "response_format", "embeddings", "dimensions", "count_tokens", "rerank"],
  vllm: ["presence_penalty", "frequency_penalty", "response_format", "tools", "tool_choice", "image_url", "embeddings", "dimensions", "rerank"],
  mlx: [],
  openai: ["presence_penalty", "frequency_penalty", "response_format", "tools", "tool_choice", "image_url", "embeddings", "dimensions", "rerank"],
});

/**
 * Where a harness changes what its runtime honours, the whole list: the `tools` harness calls tools on GGUF
 * through node-llama-cpp's function calling, each function's arguments held to its schema by a grammar.
 */
export const HARNESS_CAPABILITIES: Readonly<Record<string, Partial<Record<RuntimeKind, readonly string[]>>>> = Object.freeze({
  tools: { gguf: [...RUNTIME_CAPABILITIES.gguf, "tools", "tool_choice"] },
});

/** The harness with which a stack of this runtime honours the parameter, for the reason a request is refused. */
export function harnessHonouring(runtime: RuntimeKind, param: string): string | undefined {
  return Object.keys(HARNESS_CAPABILITIES).find((h) => HARNESS_CAPABILITIES[h]![runtime]?.includes(param));
}

/** What an orchestrator takes away: tools belong to one run of the model, and an orchestrator runs it several times (an embedding or a score is no answer to refine or vote on, and its prompts are not the one a count would count). */
const ORCHESTRATED_EXCLUDES: readonly string[] = ["tools", "tool_choice", "embeddings", "dimensions", "count_tokens", "rerank"];

/** The request parameters (beyond the basics) a stack of this runtime and layers honours. */
export function honouredParameters(runtime: RuntimeKind, harness: string | null, orchestrator: string | null = null): readonly string[] {
  const list = (harness ? HARNESS_CAPABILITIES[harness]?.[runtime] : undefined) ?? RUNTIME_CAPABILITIES[runtime];
  return orchestrator ? list.filter((p) => !ORCHESTRATED_EXCLUDES.includes(p)) : list;
}

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
 * sees the organization's other models; the `tools` harness calls tools on GGUF
 * (node-llama-cpp's function calling) and passes them through to vLLM and
 * OpenAI-compatible servers, which call them natively (MLX's server does not).
 * The orchestrators run on the agent around any runtime, calling it once per step.
 */
export const RUNTIME_LAYERS: Readonly<Record<RuntimeKind, { harness: readonly string[]; orchestrator: readonly string[] }>> = Object.freeze({
  gguf: { harness: ["system-prompt", "tools", "router"], orchestrator: ["refine", "vote"] },
  vllm: { harness: ["system-prompt", "tools", "router"], orchestrator: ["refine", "vote"] },
  mlx: { harness: ["system-prompt", "router"], orchestrator: ["refine", "vote"] },
  openai: { harness: ["system-prompt", "tools", "router"], orchestrator: ["refine", "vote"] },
});
