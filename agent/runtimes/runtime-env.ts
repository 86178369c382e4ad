/** Variables that hold Makina's or Hugging Face's secrets, or point at them: never handed to a runtime's processes. */
const SECRET = /^(MAKINA_|HF_TOKEN$|HUGGING_FACE_HUB_TOKEN$|HUGGINGFACE_HUB_TOKEN$|HF_API_TOKEN$|HUGGINGFACE_TOKEN$)/;

/** An environment without Makina's and Hugging Face's secrets (the machine token, the admin token, hub tokens). */
export function withoutSecrets(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const clean: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && !SECRET.test(k)) clean[k] = v;
  return clean;
}

/**
 * The environment a runtime's processes get (model servers, pip): `base`, the agent's own already without its
 * secrets (`AgentConfig.runtimeEnv`), plus `extra`, what one runtime needs (the Hugging Face token for vLLM when
 * it downloads a gated repository itself).
 */
export function runtimeEnv(base: Readonly<Record<string, string>> | undefined, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...base, ...extra };
}
