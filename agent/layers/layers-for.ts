import { MakinaError, validateLayerOptions, type DeployStep, type LayerOptionValue } from "../../proto/index.js";
import type { ModelRuntime } from "../runtimes/model-runtime.js";
import { RefineOrchestrator } from "./refine-orchestrator.js";
import { SystemPromptHarness } from "./system-prompt-harness.js";
import { ToolsHarness } from "./tools-harness.js";
import { VoteOrchestrator } from "./vote-orchestrator.js";

type Layers = Pick<Extract<DeployStep, { kind: "configureEndpoint" }>, "harness" | "harnessOptionsJson" | "orchestrator" | "orchestratorOptionsJson">;

/**
 * What puts a stack's layers in front of its runtime, as the relay configured them (`configureEndpoint`): the
 * harness next to the runtime, the orchestrator around it (each of its steps goes through the harness); the
 * client still sees one ordinary chat completion. Checked at once, so a layer this agent cannot run (or
 * options it cannot take) fails the step with the reason before any model is loaded.
 */
export function layersFor(layers: Layers): (runtime: ModelRuntime) => ModelRuntime {
  const harness = harnessFor(layers.harness, options(layers.harness, layers.harnessOptionsJson, "harness"));
  const orchestrator = orchestratorFor(layers.orchestrator, options(layers.orchestrator, layers.orchestratorOptionsJson, "orchestrator"));
  return (runtime) => orchestrator(harness(runtime));
}

function options(kind: string, json: string, layer: "harness" | "orchestrator"): Record<string, LayerOptionValue> {
  if (!kind) return {};
  const param = `${layer}_options`;
  let raw: unknown = {};
  try {
    raw = json ? (JSON.parse(json) as unknown) : {};
  } catch {
    throw new MakinaError("invalid_value", `The ${layer} options are not JSON.`, { param });
  }
  return validateLayerOptions(kind, raw, param);
}

function harnessFor(kind: string, options: Record<string, LayerOptionValue>): (runtime: ModelRuntime) => ModelRuntime {
  switch (kind) {
    case "":
      return (runtime) => runtime;
    case "system-prompt":
      return (runtime) => new SystemPromptHarness(runtime, options);
    case "router":
      // The relay routes before the request reaches a machine: here the stack serves as it is.
      return (runtime) => runtime;
    case "tools":
      return (runtime) => new ToolsHarness(runtime, options);
    default:
      throw new MakinaError("invalid_value", `The harness '${kind}' cannot run on this machine's agent (it runs: system-prompt, tools, router).`, { param: "harness" });
  }
}

function orchestratorFor(kind: string, options: Record<string, LayerOptionValue>): (runtime: ModelRuntime) => ModelRuntime {
  switch (kind) {
    case "":
      return (runtime) => runtime;
    case "refine":
      return (runtime) => new RefineOrchestrator(runtime, options);
    case "vote":
      return (runtime) => new VoteOrchestrator(runtime, options);
    default:
      throw new MakinaError("invalid_value", `The orchestrator '${kind}' cannot run on this machine's agent (it runs: refine, vote).`, { param: "orchestrator" });
  }
}
