import { MakinaError } from "../../../proto/index.js";
import { OpenAiServerRuntime } from "../openai-server/openai-server-runtime.js";
import type { RuntimeAdapter } from "../runtime-adapter.js";

/**
 * An OpenAI-compatible server that already runs on the machine (llama-server,
 * Ollama, LM Studio…). The stack's model is `<base URL>#<model name>`, e.g.
 * `http://127.0.0.1:11434/v1#llama3.2`. Makina does not run or restart it.
 */
export function parseServerRef(ref: string): { baseUrl: string; model: string } {
  const m = /^(https?:\/\/[^#\s]+?)\/?#(.+)$/.exec(ref);
  if (!m) throw new MakinaError("invalid_value", `An existing-server model must be '<base URL>#<model>', for example http://127.0.0.1:11434/v1#llama3.2; got '${ref}'.`);
  return { baseUrl: m[1]!, model: m[2]! };
}

export const openaiServerAdapter: RuntimeAdapter = {
  kind: "openai",
  requirements: { description: "any machine" },
  async install() {
    return { version: "external" };
  },
  async start(model) {
    const { baseUrl, model: name } = parseServerRef(model.ref);
    const res = await fetch(`${baseUrl}/models`, { signal: AbortSignal.timeout(10_000) }).catch((err: unknown) => {
      throw new MakinaError("runtime_unavailable", `The server at ${baseUrl} is not reachable: ${(err as Error).message}`);
    });
    await res.body?.cancel();
    if (!res.ok) throw new MakinaError("runtime_unavailable", `The server at ${baseUrl} answered ${res.status} to GET /models.`);
    return new OpenAiServerRuntime({ baseUrl, model: name, contextSize: 0 });
  },
};
