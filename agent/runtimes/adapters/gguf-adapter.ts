import type { Llama } from "node-llama-cpp";
import { MakinaError } from "../../../proto/index.js";
import { dependencyVersion } from "../../version.js";
import { loadGgufModel } from "../gguf/gguf-runtime.js";
import type { RuntimeAdapter } from "../runtime-adapter.js";

/** GGUF through node-llama-cpp, in the agent's process (prebuilt llama.cpp binaries from npm). */
export function ggufAdapter(options: { llama: () => Promise<Llama>; maxContextSize: number; sequences: number; threads: number }): RuntimeAdapter {
  return {
    kind: "gguf",
    requirements: { description: "any machine" },
    capabilities: ["presence_penalty", "frequency_penalty"],
    async install() {
      await options.llama();
      return { version: `node-llama-cpp ${dependencyVersion("node-llama-cpp")}` };
    },
    async start(model, ctx) {
      if (!model.path) throw new MakinaError("invalid_value", `The GGUF runtime needs a model file, got '${model.ref}'.`);
      return loadGgufModel(await options.llama(), model.path, { maxContextSize: options.maxContextSize, sequences: options.sequences, threads: options.threads, signal: ctx.signal });
    },
  };
}
