import type { LayerOptionValue } from "../../proto/index.js";
import type { ChatInput, ChatOptions, ModelRuntime, RuntimeEvent } from "../runtimes/model-runtime.js";
import { RuntimeLayer } from "./runtime-layer.js";

/**
 * The `tools` harness on the agent: the runtime calls the tools itself (GGUF through node-llama-cpp's function
 * calling, vLLM and OpenAI-compatible servers natively; the relay lets tools through only to stacks that call
 * them). The harness adds its default for `parallel_tool_calls` to requests that do not say.
 */
export class ToolsHarness extends RuntimeLayer {
  private readonly parallel: boolean | undefined;

  constructor(runtime: ModelRuntime, options: Record<string, LayerOptionValue>) {
    super(runtime);
    this.parallel = typeof options.parallel_tool_calls === "boolean" ? options.parallel_tool_calls : undefined;
  }

  chat(input: ChatInput, options?: ChatOptions): AsyncIterable<RuntimeEvent> {
    const apply = this.parallel !== undefined && input.parallelToolCalls === undefined && input.tools?.length;
    return this.runtime.chat(apply ? { ...input, parallelToolCalls: this.parallel } : input, options);
  }
}
