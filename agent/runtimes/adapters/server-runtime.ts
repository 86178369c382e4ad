import { randomBytes } from "node:crypto";
import { freePort, httpReady, ProcessSupervisor } from "../../supervisor/index.js";
import { OpenAiServerRuntime } from "../openai-server/openai-server-runtime.js";
import type { RuntimeContext } from "../runtime-adapter.js";
import { runtimeEnv } from "../runtime-env.js";

/**
 * Starts a supervised process, reports its later state changes (restarts, crash
 * loop) through `ctx.onState`, and resolves once it is ready the first time.
 * Aborting `ctx.signal` stops it.
 */
export async function superviseUntilReady(supervisor: ProcessSupervisor, ctx: RuntimeContext): Promise<void> {
  supervisor.on("state", (state) => {
    if (state === "ready") ctx.onState?.("ready", null);
    else if (state === "restarting" || state === "starting" || state === "unresponsive") ctx.onState?.("loading", supervisor.lastError);
    else if (state === "failed") ctx.onState?.("failed", supervisor.lastError);
  });
  const abort = () => void supervisor.stop();
  ctx.signal?.addEventListener("abort", abort, { once: true });
  try {
    await supervisor.start();
  } finally {
    ctx.signal?.removeEventListener("abort", abort);
  }
}

/** What a server downloading from the hub itself needs of it: the hub's address, and the token when there is one. */
function hubEnv(options: { hubDownload?: boolean; ctx: RuntimeContext }): Record<string, string> {
  const hub = options.ctx.hub;
  if (!options.hubDownload || !hub) return {};
  return { HF_ENDPOINT: hub.endpoint, ...(hub.token ? { HF_TOKEN: hub.token } : {}) };
}

/** Starts a model server under supervision and wraps it as a runtime once it is ready. */
export async function startSupervisedServer(options: {
  name: string;
  command: string;
  args: (port: number) => string[];
  readyPath: string;
  model: string;
  continuousUsage: boolean;
  /** The server downloads the model from the hub itself: it gets the hub's address and token (nothing else secret). */
  hubDownload?: boolean;
  ctx: RuntimeContext;
  /** Called once the runtime is closed, or when it fails to start. */
  onClose?: () => void;
  /**
   * The environment variable through which the server takes an API key it then requires on its `/v1` routes
   * (vLLM's `VLLM_API_KEY`): a new key each start, in the environment (never in the arguments `ps` shows), sent
   * by the agent and checked by the readiness probe, so no other user of the machine can use the server.
   */
  apiKeyEnv?: string;
  /**
   * Start it with vLLM's sleep routes (its development mode, `VLLM_SERVER_DEV_MODE=1`): it sleeps when idle instead
   * of stopping; a process that ends while it sleeps is kept stopped until the next load starts another.
   */
  sleepMode?: boolean;
  /** Started to schedule by priority (vLLM's `--scheduling-policy priority`): requests carry their tier's. */
  priorityScheduling?: boolean;
}): Promise<OpenAiServerRuntime> {
  const port = await freePort();
  const apiKey = options.apiKeyEnv ? randomBytes(24).toString("base64url") : undefined;
  const auth: Record<string, string> = apiKey ? { authorization: `Bearer ${apiKey}` } : {};
  const supervisor = new ProcessSupervisor({
    name: options.name,
    command: options.command,
    args: options.args(port),
    env: runtimeEnv(options.ctx.env, { ...hubEnv(options), ...(apiKey && options.apiKeyEnv ? { [options.apiKeyEnv]: apiKey } : {}), ...(options.sleepMode ? { VLLM_SERVER_DEV_MODE: "1" } : {}) }),
    // vLLM and MLX do not watch their stdin: the lifeline stops them when the agent dies, even by SIGKILL.
    lifeline: true,
    ready: (signal) => httpReady(`http://127.0.0.1:${port}${options.readyPath}`, signal, auth),
    ...options.ctx.health,
    log: options.ctx.log,
    onOutput: options.ctx.output,
  });
  try {
    await superviseUntilReady(supervisor, options.ctx);
  } catch (err) {
    await supervisor.stop();
    options.onClose?.();
    throw err;
  }
  return new OpenAiServerRuntime({ baseUrl: `http://127.0.0.1:${port}/v1`, model: options.model, contextSize: 0, supervisor, continuousUsage: options.continuousUsage, onClose: options.onClose, apiKey, sleepMode: options.sleepMode, priorityScheduling: options.priorityScheduling, log: options.ctx.log });
}
