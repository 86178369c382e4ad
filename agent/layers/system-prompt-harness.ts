import type { LayerOptionValue } from "../../proto/index.js";
import type { ChatInput, ChatOptions, ModelRuntime, RuntimeEvent } from "../runtimes/model-runtime.js";
import { RuntimeLayer } from "./runtime-layer.js";

/**
 * The `system-prompt` harness: a configured system prompt, used when a request brings no system (or developer)
 * message of its own, and default sampling parameters (`temperature`, `top_p`, `max_tokens`) for the requests
 * that set none. Everything else goes to the runtime as it came.
 */
export class SystemPromptHarness extends RuntimeLayer {
  constructor(
    runtime: ModelRuntime,
    private readonly options: Record<string, LayerOptionValue>,
  ) {
    super(runtime);
  }

  /** What the runtime is asked: the request, with the harness's prompt and defaults where it set none. */
  apply(input: ChatInput): ChatInput {
    const { prompt, temperature, top_p: topP, max_tokens: maxTokens } = this.options;
    const unset = input.unset ?? [];
    const hasSystem = input.messages.some((m) => m.role === "system" || m.role === "developer");
    return {
      ...input,
      messages: typeof prompt === "string" && !hasSystem ? [{ role: "system", content: prompt }, ...input.messages] : input.messages,
      temperature: typeof temperature === "number" && unset.includes("temperature") ? temperature : input.temperature,
      topP: typeof topP === "number" && unset.includes("top_p") ? topP : input.topP,
      maxTokens: typeof maxTokens === "number" && input.maxTokens === 0 ? maxTokens : input.maxTokens,
    };
  }

  chat(input: ChatInput, options?: ChatOptions): AsyncIterable<RuntimeEvent> {
    return this.runtime.chat(this.apply(input), options);
  }
}
