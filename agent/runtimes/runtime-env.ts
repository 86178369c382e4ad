/** Variables that hold Makina's or Hugging Face's secrets, or point at them: never handed to a runtime's processes. */
const SECRET = /^(MAKINA_|HF_TOKEN$|HUGGING_FACE_HUB_TOKEN$|HUGGINGFACE_HUB_TOKEN$|HF_API_TOKEN$|HUGGINGFACE_TOKEN$)/;

/**
 * The environment a runtime's processes get (model servers, pip): the agent's own, without its secrets, the
 * machine token, the admin token, the Hugging Face token, so that a model server (or a package pip installs)
 * can never read them. `extra` adds what one runtime needs, e.g. the Hugging Face token for vLLM when it
 * downloads a gated repository itself.
 */
export function runtimeEnv(extra: Record<string, string> = {}, env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const clean: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) if (!SECRET.test(k)) clean[k] = v;
  return { ...clean, ...extra };
}
