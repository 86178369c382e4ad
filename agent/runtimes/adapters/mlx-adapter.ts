import { join } from "node:path";
import { MLX_PACKAGE } from "../python-pins.js";
import { binaryVersion, installIntoVenv } from "../python-venv.js";
import { MLX_KEY_ENV, MLX_LAUNCHER } from "./mlx-launcher.js";
import type { RuntimeAdapter } from "../runtime-adapter.js";
import { startSupervisedServer } from "./server-runtime.js";

/**
 * MLX on Apple silicon: mlx-lm installed with pip into its own virtual
 * environment, its server run on a loopback port with a per-start key it requires of every request (through
 * {@link MLX_LAUNCHER}, as mlx-lm has no key option), ready when it lists its models to that key, requests
 * forwarded to its OpenAI endpoint.
 */
export const mlxAdapter: RuntimeAdapter = {
  kind: "mlx",
  requirements: { platforms: ["darwin"], arch: ["arm64"], description: "macOS on Apple silicon" },
  async install(ctx) {
    const bin = await installIntoVenv("mlx", [ctx.packages?.mlx ?? MLX_PACKAGE], "mlx_lm.server", ctx);
    return { version: await binaryVersion(join(bin, "python"), ["-c", "import mlx_lm; print(mlx_lm.__version__)"]) };
  },
  async start(model, ctx) {
    const bin = await installIntoVenv("mlx", [ctx.packages?.mlx ?? MLX_PACKAGE], "mlx_lm.server", ctx);
    const source = model.path ?? model.ref.replace(/^hf:/, "");
    return startSupervisedServer({
      name: `mlx ${model.modelId}`,
      command: join(bin, "python"),
      args: (port) => ["-c", MLX_LAUNCHER, "--model", source, "--host", "127.0.0.1", "--port", String(port)],
      readyPath: "/v1/models",
      apiKeyEnv: MLX_KEY_ENV,
      model: source,
      // The hub's token only when the runtime downloads a repository from it itself.
      hubDownload: !model.path && model.ref.startsWith("hf:"),
      continuousUsage: false,
      ctx,
    });
  },
};
