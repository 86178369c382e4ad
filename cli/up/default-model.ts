/** The model `makina up` deploys when `--model` is not given: Qwen2.5 0.5B Instruct, Q4_K_M (Apache-2.0, about 0.4 GB). */
export const DEFAULT_MODEL = "hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf";
/** The id clients pass as `model` for {@link DEFAULT_MODEL}. */
export const DEFAULT_MODEL_ID = "qwen2.5-0.5b-instruct";
