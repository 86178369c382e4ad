import { MakinaError, validateLayerOptions } from "../../proto/index.js";
import type { ModelRuntime } from "../runtimes/model-runtime.js";
import { SystemPromptHarness } from "./system-prompt-harness.js";

/**
 * What puts a stack's harness in front of its runtime, as the relay configured it (`configureEndpoint`): the
 * client still sees one ordinary chat completion. Checked at once, so a harness this agent cannot run (or
 * options it cannot take) fails the step with the reason before any model is loaded.
 */
export function layersFor(harness: string, harnessOptionsJson: string): (runtime: ModelRuntime) => ModelRuntime {
  if (!harness) return (runtime) => runtime;
  let raw: unknown = {};
  try {
    raw = harnessOptionsJson ? (JSON.parse(harnessOptionsJson) as unknown) : {};
  } catch {
    throw new MakinaError("invalid_value", "The harness options are not JSON.", { param: "harness_options" });
  }
  const options = validateLayerOptions(harness, raw, "harness_options");
  switch (harness) {
    case "system-prompt":
      return (runtime) => new SystemPromptHarness(runtime, options);
    case "router":
      // The relay routes before the request reaches a machine: here the stack serves as it is.
      return (runtime) => runtime;
    case "tools":
      // The runtime calls the tools itself: GGUF through node-llama-cpp's function calling, vLLM and
      // OpenAI-compatible servers natively. The relay lets tools through only to stacks that call them.
      return (runtime) => runtime;
    default:
      throw new MakinaError("invalid_value", `The harness '${harness}' cannot run on this machine's agent (it runs: system-prompt, tools, router).`, { param: "harness" });
  }
}
