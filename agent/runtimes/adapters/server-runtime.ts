import { freePort, httpReady, ProcessSupervisor } from "../../supervisor/index.js";
import { OpenAiServerRuntime } from "../openai-server/openai-server-runtime.js";
import type { RuntimeContext } from "../runtime-adapter.js";

/** Starts a model server under supervision and wraps it as a runtime once it is ready. */
export async function startSupervisedServer(options: {
  name: string;
  command: string;
  args: (port: number) => string[];
  readyPath: string;
  model: string;
  continuousUsage: boolean;
  ctx: RuntimeContext;
  /** The server's readiness answer says its context size as `context_size`. */
  contextSizeFromReady?: boolean;
  /** Called once the runtime is closed, or when it fails to start. */
  onClose?: () => void;
}): Promise<OpenAiServerRuntime> {
  const port = await freePort();
  const supervisor = new ProcessSupervisor({
    name: options.name,
    command: options.command,
    args: options.args(port),
    ready: (signal) => httpReady(`http://127.0.0.1:${port}${options.readyPath}`, signal),
    log: options.ctx.log,
  });
  supervisor.on("state", (state) => {
    if (state === "ready") options.ctx.onState?.("ready", null);
    else if (state === "restarting" || state === "starting") options.ctx.onState?.("loading", supervisor.lastError);
    else if (state === "failed") options.ctx.onState?.("failed", supervisor.lastError);
  });
  const abort = () => void supervisor.stop();
  options.ctx.signal?.addEventListener("abort", abort, { once: true });
  try {
    await supervisor.start();
  } catch (err) {
    await supervisor.stop();
    options.onClose?.();
    throw err;
  } finally {
    options.ctx.signal?.removeEventListener("abort", abort);
  }
  let contextSize = 0;
  if (options.contextSizeFromReady) {
    const info = (await (await fetch(`http://127.0.0.1:${port}${options.readyPath}`)).json()) as { context_size?: number };
    contextSize = info.context_size ?? 0;
  }
  return new OpenAiServerRuntime({ baseUrl: `http://127.0.0.1:${port}/v1`, model: options.model, contextSize, supervisor, continuousUsage: options.continuousUsage, onClose: options.onClose });
}
