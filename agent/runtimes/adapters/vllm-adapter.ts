import { join } from "node:path";
import { VLLM_PACKAGE } from "../python-pins.js";
import { binaryVersion, installIntoVenv } from "../python-venv.js";
import type { RuntimeAdapter } from "../runtime-adapter.js";
import { startSupervisedServer } from "./server-runtime.js";

/**
 * vLLM: installed with pip into its own virtual environment, run as
 * `vllm serve` on a loopback port, with a per-start API key (only the agent can use it), ready when its
 * models answer to that key, requests
 * forwarded to its OpenAI endpoint. A model is a local path or a hub id
 * (`hf:owner/repo` → `owner/repo`, which vLLM downloads itself).
 */
export const vllmAdapter: RuntimeAdapter = {
  kind: "vllm",
  requirements: { platforms: ["linux"], accelerators: ["cuda"], description: "Linux with an NVIDIA GPU (CUDA)" },
  async install(ctx) {
    const bin = await installIntoVenv("vllm", [ctx.packages?.vllm ?? VLLM_PACKAGE], "vllm", ctx);
    return { version: await binaryVersion(join(bin, "vllm")) };
  },
  async start(model, ctx) {
    const bin = await installIntoVenv("vllm", [ctx.packages?.vllm ?? VLLM_PACKAGE], "vllm", ctx);
    const source = model.path ?? model.ref.replace(/^hf:/, "");
    return startSupervisedServer({
      name: `vllm ${model.modelId}`,
      command: join(bin, "vllm"),
      // The agent puts every image inline before vLLM sees it; where the operator named the hosts images may come
      // from, vLLM is held to them as well.
      args: (port) => [
        "serve",
        source,
        "--host",
        "127.0.0.1",
        "--port",
        String(port),
        "--served-model-name",
        model.modelId,
        // The stack's context; without it vLLM takes the model's own length.
        ...(model.maxContext ? ["--max-model-len", String(model.maxContext)] : []),
        // On demand: it sleeps when idle (level 1, its GPU memory freed) and wakes for the next request.
        ...(model.onDemand ? ["--enable-sleep-mode"] : []),
        ...(ctx.allowedMediaDomains?.length ? ["--allowed-media-domains", ...ctx.allowedMediaDomains] : []),
        // Requests run in the order of their service tier (each carries `priority`), not only as they come.
        "--scheduling-policy",
        "priority",
      ],
      // Ready when it answers a route that takes its key: it is up, and it is the server started with that key.
      readyPath: "/v1/models",
      apiKeyEnv: "VLLM_API_KEY",
      model: model.modelId,
      // The hub's token only when the runtime downloads a repository from it itself.
      hubDownload: !model.path && model.ref.startsWith("hf:"),
      continuousUsage: true,
      sleepMode: model.onDemand,
      priorityScheduling: true,
      ctx,
    });
  },
};
