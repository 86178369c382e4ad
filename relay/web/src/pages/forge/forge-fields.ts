import type { RuntimeKind, Stack } from "../../api/types.js";

/** Every runtime kind of the contract, as the Forge offers it: a kind added there fails the build here until it has its words. */
export const RUNTIME_CHOICES: Record<RuntimeKind, { label: string; hint: string }> = {
  gguf: { label: "GGUF (llama.cpp)", hint: "Any machine; CPU, CUDA, Vulkan or Metal." },
  vllm: { label: "vLLM", hint: "Linux with an NVIDIA GPU; high throughput." },
  mlx: { label: "MLX", hint: "macOS on Apple silicon." },
  openai: { label: "Existing server", hint: "An OpenAI-compatible server already running on the machine." },
};
export const RUNTIMES = (Object.keys(RUNTIME_CHOICES) as RuntimeKind[]).map((kind) => ({ kind, ...RUNTIME_CHOICES[kind] }));

/** Each harness in words: what it does to a request, shown under the choice. */
export const HARNESS_WORDS: Record<string, string> = {
  "": "Requests reach the model as clients send them.",
  "system-prompt": "Puts your system prompt (and its sampling) in front of every request that brings none of its own.",
  tools: "Lets the model call the tools a request offers (tools, tool_choice), with its answers shaped as tool calls.",
  router: "Sends each request to one of the organization's models by rules on its text, tools or images; the first rule that matches wins.",
};
/** Each orchestrator in words: how many runs of the model make one answer. */
export const ORCHESTRATOR_WORDS: Record<string, string> = {
  "": "One run of the model per answer.",
  refine: "Drafts an answer, then critiques and revises it for the rounds you set: slower, often better.",
  vote: "Draws several answers at once and returns the most consistent one: costs a run per sample.",
};

export const CUSTOM = "__custom__";

/** The Forge's fields: one per choice, as text (an input's value) or yes/no. */
export const FIELDS = {
  machine: "",
  runtime: "gguf" as RuntimeKind,
  /** The catalog model picked, or {@link CUSTOM}. */
  choice: "",
  custom: "",
  sha256: "",
  harness: "",
  systemPrompt: "",
  routes: '[{"model": "", "pattern": ""}]',
  routeDefault: "",
  parallelCalls: true,
  orchestrator: "",
  rounds: "1",
  samples: "3",
  sampleTemperature: "",
  /** Tokens of context per request; empty: the machine's default. */
  maxContext: "",
  endpoint: true,
  modelId: "",
  name: "",
  /** `always` (loaded while deployed) or `on_demand` (loaded by its first request, unloaded when idle). */
  residency: "always" as "always" | "on_demand",
  /** Seconds without a request before an on-demand stack's model unloads (0: only when the memory is needed). */
  idleUnload: "600",
};

export type FieldName = keyof typeof FIELDS;

/** The fields each refused parameter comes from: its error shows next to them until one of them changes. */
export const FIELDS_OF_PARAM: Record<string, FieldName[]> = {
  machine: ["machine"],
  model: ["choice", "custom"],
  model_sha256: ["sha256"],
  "harness_options.prompt": ["systemPrompt"],
  "harness_options.routes": ["routes"],
  "harness_options.default": ["routeDefault"],
  "orchestrator_options.rounds": ["rounds"],
  "orchestrator_options.samples": ["samples"],
  "orchestrator_options.temperature": ["sampleTemperature"],
  model_id: ["modelId"],
  max_context: ["maxContext"],
  residency: ["residency"],
  idle_unload_s: ["idleUnload"],
  name: ["name", "modelId"],
};

/** The Forge's fields holding a stack as it is, to edit it. */
export function fieldsOf(s: Stack): typeof FIELDS {
  const h = s.harness_options ?? {};
  const o = s.orchestrator_options ?? {};
  const text = (v: unknown, fallback: string) => (v === undefined || v === null ? fallback : String(v));
  return {
    machine: s.machine_id,
    runtime: s.runtime,
    choice: CUSTOM,
    custom: s.model_ref,
    sha256: s.model_sha256 ?? "",
    harness: s.harness ?? "",
    systemPrompt: text(h.prompt, ""),
    routes: h.routes !== undefined ? JSON.stringify(h.routes) : FIELDS.routes,
    routeDefault: text(h.default, ""),
    parallelCalls: h.parallel_tool_calls !== false,
    orchestrator: s.orchestrator ?? "",
    rounds: text(o.rounds, FIELDS.rounds),
    samples: text(o.samples, FIELDS.samples),
    sampleTemperature: text(o.temperature, ""),
    maxContext: s.max_context === null ? "" : String(s.max_context),
    endpoint: s.has_endpoint,
    modelId: s.model_id,
    name: s.name,
    residency: s.residency,
    idleUnload: String(s.idle_unload_s),
  };
}

/** Whether `param` is `field` or one of its parts (`harness_options.routes[0].model` of `harness_options.routes`). */
export const isPartOf = (param: string, field: string) => param === field || param.startsWith(`${field}[`) || param.startsWith(`${field}.`);

/** The Forge's fields, as a value. */
export type ForgeFields = typeof FIELDS;

/** The model id the relay gives a stack when none is given: the model file's name, written as a model id may be. */
export function modelIdOf(modelRef: string): string {
  return (modelRef.split(/[\\/]/).pop() ?? "")
    .replace(/[?#].*$/, "")
    .replace(/\.gguf$/i, "")
    .replace(/[^A-Za-z0-9._:/@+-]/g, "-")
    .replace(/^[^A-Za-z0-9]+/, "")
    .slice(0, 128);
}

/**
 * The model a Forge's fields choose for `runtime`: the catalog's entry picked, or what is typed when "Custom" is
 * chosen (or when the runtime has no catalog); nothing before a choice, so a reference typed for another runtime
 * is never judged for this one.
 */
export function modelChosen<M extends { runtime: string; ref: string }>(catalog: readonly M[], runtime: string, choice: string, custom: string) {
  const models = catalog.filter((m) => m.runtime === runtime);
  const picked = models.find((m) => m.ref === choice);
  const customShown = choice === CUSTOM || (!models.length && choice === "");
  return { models, picked, customShown, modelRef: picked ? picked.ref : customShown ? custom.trim() : "" };
}
