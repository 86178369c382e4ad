import { HubSearch } from "./hub-search.js";
import { useRef, useState } from "preact/hooks";
import type { CatalogModel, Check, Machine, Stack } from "../../api/types.js";
import { formatBytes } from "../../components/format.js";
import { CONTEXT_RANGE, contextProblem, SIZED_CONTEXT } from "./context-bounds.js";
import { describedBy, Field } from "../../components/field.js";
import type { Form } from "../../components/use-form.js";
import { CUSTOM, HARNESS_WORDS, ORCHESTRATOR_WORDS, RUNTIMES, type ForgeFields } from "./forge-fields.js";

/** What a fieldset of the Forge reads: the form, and what the relay (`fieldError`) or the rules (`refused`) said of a choice. */
interface FieldsetProps {
  form: Form<ForgeFields>;
  /** The relay's refusal of a parameter, while its field still holds what was refused. */
  fieldError: (param: string) => string | null;
  /** What the compatibility rules refuse of a choice. */
  refused: (param: Check["param"]) => string | null;
}

/** 1 · The machine (a deployed stack's is pinned: undeploy it to move it). */
export function MachineFieldset({ form, fieldError, refused, machines, pinned }: FieldsetProps & { machines: Machine[]; pinned: boolean }) {
  const selected = machines.find((m) => m.id === form.values.machine);
  return (
    <fieldset>
      <legend>1 · Machine</legend>
      <Field id="forge-machine" label="Machine" error={fieldError("machine") ?? refused("machine")}>
        <select id="forge-machine" {...form.choice("machine")} disabled={pinned}>
          {machines.map((m) => (
            <option key={m.id} value={m.id}>
              {m.name} ({m.state}
              {m.hardware ? `, ${m.hardware.os}, ${formatBytes(m.hardware.memory_bytes)} RAM` : ""})
            </option>
          ))}
        </select>
      </Field>
      {selected && selected.state !== "online" && <p class="hint">This machine is {selected.state}: its stacks deploy when it connects.</p>}
    </fieldset>
  );
}

/**
 * 2 · The runtime, one of every kind the contract has. Each runtime keeps its own model choice: switching to
 * another starts from its own (none, the first time: a GGUF path means nothing to vLLM), and switching back
 * brings back what was chosen or typed for it.
 */
export function RuntimeFieldset({ form, refused }: Pick<FieldsetProps, "form" | "refused">) {
  const kept = useRef(new Map<string, { choice: string; custom: string; sha256: string }>());
  const switchTo = (kind: ForgeFields["runtime"]) => {
    const v = form.values;
    if (kind === v.runtime) return;
    kept.current.set(v.runtime, { choice: v.choice, custom: v.custom, sha256: v.sha256 });
    const back = kept.current.get(kind) ?? { choice: "", custom: "", sha256: "" };
    form.set("runtime", kind);
    form.set("choice", back.choice);
    form.set("custom", back.custom);
    form.set("sha256", back.sha256);
  };
  return (
    <fieldset>
      <legend>2 · Runtime</legend>
      <div class="choices" role="radiogroup" aria-label="Runtime" aria-describedby={refused("runtime") ? "forge-runtime-error" : undefined}>
        {RUNTIMES.map((r) => (
          <label key={r.kind} class={`choice ${form.values.runtime === r.kind ? "selected" : ""}`}>
            <input
              type="radio"
              name="runtime"
              value={r.kind}
              checked={form.values.runtime === r.kind}
              onChange={() => switchTo(r.kind)}
            />
            <span class="choice-title">{r.label}</span>
            <span class="choice-hint">{r.hint}</span>
          </label>
        ))}
      </div>
      {refused("runtime") && (
        <p class="field-error" id="forge-runtime-error" role="alert">
          {refused("runtime")}
        </p>
      )}
    </fieldset>
  );
}

/** 3 · The model: from the catalog for the runtime, or named (a path, URL, hub reference, or the server's name), with its pin and context size. */
export function ModelFieldset({ form, fieldError, refused, models, customShown, fromUrl }: FieldsetProps & { models: CatalogModel[]; customShown: boolean; fromUrl: boolean }) {
  // A context typed wrong is said once the field is left (not at each keystroke on the way to a right one).
  const [contextLeft, setContextLeft] = useState(false);
  const contextError = fieldError("max_context") ?? refused("max_context") ?? (contextLeft ? contextProblem(form.values.maxContext) : null);
  const v = form.values;
  return (
    <fieldset>
      <legend>3 · Model</legend>
      <Field id="forge-model" label="Model" error={fieldError("model") ?? (customShown ? null : refused("model"))}>
        <select id="forge-model" value={v.choice || (models.length ? "" : CUSTOM)} onChange={(e) => form.set("choice", e.currentTarget.value)}>
          <option value="">Choose a model…</option>
          {models.map((m) => (
            <option key={m.ref} value={m.ref}>
              {m.label}
            </option>
          ))}
          <option value={CUSTOM}>{v.runtime === "openai" ? "The server's model name…" : "Custom: a path, URL or hf: reference…"}</option>
        </select>
      </Field>
      {v.runtime !== "openai" && (
        <details class="hub">
          <summary>Find a model on the hub…</summary>
          <HubSearch
            runtime={v.runtime}
            machine={v.machine}
            onPick={(model) => {
              form.set("choice", CUSTOM);
              form.set("custom", model);
            }}
          />
        </details>
      )}
      {customShown && (
        <Field
          id="forge-custom"
          label={v.runtime === "openai" ? "Model name on the server" : "Model reference"}
          hint={v.runtime === "gguf" ? "A .gguf path on the machine, an https:// URL, or hf:owner/repo/file.gguf" : v.runtime === "openai" ? "e.g. llama3.1:8b" : "A Hugging Face repository id, e.g. Qwen/Qwen2.5-7B-Instruct"}
          error={v.custom.trim() ? refused("model") : null}
        >
          <input id="forge-custom" {...form.text("custom")} aria-describedby={describedBy("forge-custom", v.custom.trim() ? refused("model") : null)} spellcheck={false} />
        </Field>
      )}
      {fromUrl && (
        <Field
          id="forge-model-sha256"
          label="SHA-256 of the file (recommended)"
          hint="Pin the file: the machine refuses any other. Without it the stack is marked unverified."
          error={fieldError("model_sha256")}
        >
          <input id="forge-model-sha256" {...form.text("sha256")} aria-describedby={describedBy("forge-model-sha256", fieldError("model_sha256"))} spellcheck={false} />
        </Field>
      )}
      {SIZED_CONTEXT.includes(v.runtime) && (
        <Field
          id="forge-max-context"
          label="Context size (tokens)"
          hint="The most tokens of prompt and answer per request. More takes more memory: the compatibility panel follows it. Empty: the machine's default (4,096 unless its agent says otherwise); never more than the model was trained for."
          error={contextError}
        >
          <input
            id="forge-max-context"
            type="number"
            min={CONTEXT_RANGE.min}
            max={CONTEXT_RANGE.max}
            step={256}
            inputMode="numeric"
            placeholder="4096"
            {...form.text("maxContext")}
            onBlur={() => setContextLeft(true)}
            aria-describedby={describedBy("forge-max-context", contextError)}
          />
        </Field>
      )}
    </fieldset>
  );
}

/** 4 · The optional layers: a harness and an orchestrator, each with its options. */
export function LayersFieldset({ form, fieldError, refused }: FieldsetProps) {
  const v = form.values;
  return (
    <fieldset>
      <legend>4 · Layers (optional)</legend>
      <div class="row">
        <Field id="forge-harness" label="Harness" hint={HARNESS_WORDS[v.harness]} error={refused("harness")}>
          <select id="forge-harness" {...form.choice("harness")} aria-describedby={describedBy("forge-harness", refused("harness"))}>
            <option value="">None</option>
            <option value="system-prompt">System prompt</option>
            <option value="tools">Tools</option>
            <option value="router">Router</option>
          </select>
        </Field>
        {v.harness === "system-prompt" && (
          <Field id="forge-system-prompt" label="System prompt" hint="Used when a request brings no system message of its own." error={fieldError("harness_options.prompt")}>
            <textarea
              id="forge-system-prompt"
              rows={3}
              {...form.text("systemPrompt")}
              aria-describedby={describedBy("forge-system-prompt", fieldError("harness_options.prompt"))}
            />
          </Field>
        )}
        {v.harness === "tools" && (
          <Field id="forge-parallel-calls" label="Tool calls" hint="When a request does not say.">
            <label class="check-row">
              <input id="forge-parallel-calls" type="checkbox" {...form.check("parallelCalls")} aria-describedby="forge-parallel-calls-hint" /> Several in one answer
            </label>
          </Field>
        )}
        {v.harness === "router" && (
          <>
            <Field
              id="forge-routes"
              label="Routing rules (JSON)"
              hint='First match wins: [{"model": ID, "min_chars"?, "max_chars"?, "pattern"?, "tools"?, "images"?}].'
              error={fieldError("harness_options.routes")}
            >
              <textarea id="forge-routes" rows={3} {...form.text("routes")} spellcheck={false} aria-describedby={describedBy("forge-routes", fieldError("harness_options.routes"))} />
            </Field>
            <Field id="forge-route-default" label="Default model id" hint="When no rule matches; empty: this stack's own." error={fieldError("harness_options.default")}>
              <input id="forge-route-default" {...form.text("routeDefault")} spellcheck={false} />
            </Field>
          </>
        )}
        <Field id="forge-orchestrator" label="Orchestrator" hint={ORCHESTRATOR_WORDS[v.orchestrator]} error={refused("orchestrator")}>
          <select id="forge-orchestrator" {...form.choice("orchestrator")} aria-describedby={describedBy("forge-orchestrator", refused("orchestrator"))}>
            <option value="">None</option>
            <option value="refine">Refine</option>
            <option value="vote">Vote</option>
          </select>
        </Field>
        {v.orchestrator === "refine" && (
          <Field id="forge-rounds" label="Rounds" hint="Critique and revise this many times after the draft (1 to 4)." error={fieldError("orchestrator_options.rounds")}>
            <input id="forge-rounds" type="number" min={1} max={4} {...form.text("rounds")} aria-describedby={describedBy("forge-rounds", fieldError("orchestrator_options.rounds"))} />
          </Field>
        )}
        {v.orchestrator === "vote" && (
          <>
            <Field id="forge-samples" label="Samples" hint="Answers drawn at once; the most consistent wins (2 to 8)." error={fieldError("orchestrator_options.samples")}>
              <input id="forge-samples" type="number" min={2} max={8} {...form.text("samples")} aria-describedby={describedBy("forge-samples", fieldError("orchestrator_options.samples"))} />
            </Field>
            <Field id="forge-sample-temperature" label="Sample temperature" hint="When a request sets none; empty: 0.8." error={fieldError("orchestrator_options.temperature")}>
              <input
                id="forge-sample-temperature"
                inputMode="decimal"
                {...form.text("sampleTemperature")}
                placeholder="0.8"
                aria-describedby={describedBy("forge-sample-temperature", fieldError("orchestrator_options.temperature"))}
              />
            </Field>
          </>
        )}
      </div>
    </fieldset>
  );
}

/** 5 · Whether the stack is reachable through the API, its model id and its name. */
export function EndpointFieldset({ form, fieldError, suggestedId, replicas }: Pick<FieldsetProps, "form" | "fieldError"> & { suggestedId: string; replicas: Stack[] }) {
  const serving = replicas.filter((r) => r.state === "deployed" || r.state === "deploying");
  const modelIdHint = replicas.length
    ? `What clients pass as \`model\`. Also served by ${replicas.map((r) => `${r.name} (${r.state})`).join(", ")}${serving.length ? ": requests for it are shared" : ": they share its requests once deployed"}.`
    : "What clients pass as `model`.";
  return (
    <fieldset>
      <legend>5 · Endpoint</legend>
      <label class="check-row">
        <input type="checkbox" {...form.check("endpoint")} /> Expose through the API
      </label>
      {form.values.runtime !== "openai" && (
        <div class="row">
          <Field
            id="forge-residency"
            label="Loaded"
            hint={
              form.values.residency === "on_demand"
                ? "By its first request, which waits for the load; unloaded when idle, or to make room for another on the machine."
                : "While deployed: always in memory, never unloaded for another."
            }
            error={fieldError("residency")}
          >
            <select id="forge-residency" {...form.choice("residency")}>
              <option value="always">Always (while deployed)</option>
              <option value="on_demand">On demand</option>
            </select>
          </Field>
          {form.values.residency === "on_demand" && (
            <Field id="forge-idle-unload" label="Unload after (seconds idle)" hint="0: only when the machine needs the memory." error={fieldError("idle_unload_s")}>
              <input id="forge-idle-unload" type="number" min={0} max={604800} step={60} inputMode="numeric" {...form.text("idleUnload")} />
            </Field>
          )}
        </div>
      )}
      <div class="row">
        <Field id="forge-model-id" label="Model id" hint={modelIdHint} error={fieldError("model_id")}>
          <input id="forge-model-id" {...form.text("modelId")} placeholder={suggestedId} disabled={!form.values.endpoint} spellcheck={false} />
        </Field>
        <Field id="forge-name" label="Stack name" error={fieldError("name")}>
          <input id="forge-name" {...form.text("name")} placeholder={form.values.modelId || suggestedId || "my-stack"} />
        </Field>
      </div>
    </fieldset>
  );
}
