/** The vLLM the docs name, installed unless the agent's config says otherwise (`MAKINA_AGENT_VLLM_PACKAGE`). */
export const VLLM_PACKAGE = "vllm==0.20.0";

/** The mlx-lm the docs name, installed unless the agent's config says otherwise (`MAKINA_AGENT_MLX_PACKAGE`). */
export const MLX_PACKAGE = "mlx-lm==0.28.2";
