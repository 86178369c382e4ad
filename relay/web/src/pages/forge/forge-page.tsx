import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { ApiError } from "../../api/admin-client.js";
import type { CatalogModel, Check, Compatibility, RuntimeKind, Stack } from "../../api/types.js";
import { useLive } from "../../api/use-live.js";
import { useApp, useIsAdmin } from "../../app-context.js";
import { describedBy, Field } from "../../components/field.js";
import { formatBytes } from "../../components/format.js";
import { Link } from "../../components/link.js";
import { EmptyState, Notice, PageHeader } from "../../components/notice.js";
import { useForm } from "../../components/use-form.js";
import { CompatibilityPanel, verdictOf } from "./compatibility-panel.js";
import { CONTEXT_RANGE, SIZED_CONTEXT } from "./context-bounds.js";

/** Every runtime kind of the contract, as the Forge offers it: a kind added there fails the build here until it has its words. */
const RUNTIME_CHOICES: Record<RuntimeKind, { label: string; hint: string }> = {
  gguf: { label: "GGUF (llama.cpp)", hint: "Any machine; CPU, CUDA, Vulkan or Metal." },
  vllm: { label: "vLLM", hint: "Linux with an NVIDIA GPU; high throughput." },
  mlx: { label: "MLX", hint: "macOS on Apple silicon." },
  openai: { label: "Existing server", hint: "An OpenAI-compatible server already running on the machine." },
};
const RUNTIMES = (Object.keys(RUNTIME_CHOICES) as RuntimeKind[]).map((kind) => ({ kind, ...RUNTIME_CHOICES[kind] }));

/** Each harness in words: what it does to a request, shown under the choice. */
const HARNESS_WORDS: Record<string, string> = {
  "": "Requests reach the model as clients send them.",
  "system-prompt": "Puts your system prompt (and its sampling) in front of every request that brings none of its own.",
  tools: "Lets the model call the tools a request offers (tools, tool_choice), with its answers shaped as tool calls.",
  router: "Sends each request to one of the organization's models by rules on its text, tools or images; the first rule that matches wins.",
};
/** Each orchestrator in words: how many runs of the model make one answer. */
const ORCHESTRATOR_WORDS: Record<string, string> = {
  "": "One run of the model per answer.",
  refine: "Drafts an answer, then critiques and revises it for the rounds you set: slower, often better.",
  vote: "Draws several answers at once and returns the most consistent one: costs a run per sample.",
};

const CUSTOM = "__custom__";

/** The Forge's fields: one per choice, as text (an input's value) or yes/no. */
const FIELDS = {
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
};

type FieldName = keyof typeof FIELDS;

/** The fields each refused parameter comes from: its error shows next to them until one of them changes. */
const FIELDS_OF_PARAM: Record<string, FieldName[]> = {
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
  name: ["name", "modelId"],
};



/** The Forge's fields holding a stack as it is, to edit it. */
function fieldsOf(s: Stack): typeof FIELDS {
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
  };
}

/** Whether `param` is `field` or one of its parts (`harness_options.routes[0].model` of `harness_options.routes`). */
const isPartOf = (param: string, field: string) => param === field || param.startsWith(`${field}[`) || param.startsWith(`${field}.`);

/**
 * Builds a stack layer by layer, with a compatibility panel that answers every choice; or, given `editing`, changes
 * that stack (a deployed one is redeployed with what its machine builds on, and cannot change machine).
 */
export function ForgePage({ editing }: { editing?: Stack } = {}) {
  const { client, session, navigate, notify } = useApp();
  const isAdmin = useIsAdmin();
  const machines = useLive(() => client.call("GET /admin/v1/machines", { query: { per_page: 1000 } }).then((l) => l.data), ["machine"], []);
  const [catalog, setCatalog] = useState<CatalogModel[]>([]);
  const form = useForm(editing ? fieldsOf(editing) : FIELDS);
  /** A deployed (or deploying) stack stays on its machine: undeploy it to move it. */
  const pinnedMachine = editing !== undefined && editing.state !== "draft" && editing.state !== "failed";
  const { machine, runtime, choice, custom, sha256, harness, systemPrompt, routes, routeDefault, parallelCalls, orchestrator, rounds, samples, sampleTemperature, maxContext, endpoint, modelId, name } = form.values;
  const [compat, setCompat] = useState<{ result: Compatibility | null; pending: boolean }>({ result: null, pending: false });
  /** The last submit: what the relay refused, and the fields as they were then. */
  const [submitted, setSubmitted] = useState<{ error: ApiError | null; busy: boolean; values: typeof FIELDS | null }>({ error: null, busy: false, values: null });
  const { error, busy } = submitted;
  const seq = useRef(0);

  useEffect(() => {
    client.call("GET /admin/v1/catalog").then((l) => setCatalog(l.data), () => setCatalog([]));
  }, [client]);
  useEffect(() => {
    if (!machine && machines.data?.length) form.set("machine", (machines.data.find((m) => m.state === "online") ?? machines.data[0]!).id);
  }, [machines.data, machine, form]);

  const models = catalog.filter((m) => m.runtime === runtime);
  const picked = models.find((m) => m.ref === choice);
  const modelRef = choice === CUSTOM || !picked ? custom.trim() : picked.ref;
  // As the relay makes it when none is given: the file's name, written as a model id may be.
  const suggestedId =
    picked?.model_id ??
    (modelRef.split(/[\\/]/).pop() ?? "")
      .replace(/[?#].*$/, "")
      .replace(/\.gguf$/i, "")
      .replace(/[^A-Za-z0-9._:/@+-]/g, "-")
      .replace(/^[^A-Za-z0-9]+/, "")
      .slice(0, 128);

  // The context asked, for the panel's estimate: a whole number in the relay's range, or none (the machine's
  // default). What is not one is left to the submit, where the relay says what it wants at the field.
  const typedContext = Number(maxContext.trim());
  const contextAsked = SIZED_CONTEXT.includes(runtime) && /^\d+$/.test(maxContext.trim()) && typedContext >= CONTEXT_RANGE.min && typedContext <= CONTEXT_RANGE.max ? typedContext : null;
  useEffect(() => {
    if (!machine) return;
    // The first look at once; then a pause while choices change (typing a reference), so one check goes per pause.
    const pause = seq.current === 0 ? 0 : 150;
    const mine = ++seq.current;
    setCompat((c) => ({ ...c, pending: true }));
    const timer = setTimeout(() => {
      client
        .call("POST /admin/v1/compatibility", { body: { org: session.org.id, machine, runtime, model: modelRef, harness: harness || null, orchestrator: orchestrator || null, endpoint, max_context: contextAsked } })
        .then(
          (result) => mine === seq.current && setCompat({ result, pending: false }),
          (e: ApiError) =>
            mine === seq.current && setCompat({ result: { ok: false, checks: [{ topic: "runtime", param: "runtime", level: "fail", message: e.message }], serves: [] }, pending: false }),
        );
    }, pause);
    return () => clearTimeout(timer);
  }, [client, session.org.id, machine, runtime, modelRef, harness, orchestrator, endpoint, contextAsked]);

  const machineList = useMemo(() => machines.data ?? [], [machines.data]);
  if (!isAdmin) {
    return (
      <EmptyState title="Only admins build stacks">
        <p>Ask an admin of {session.org.name} to build one; you can use every stack from the Stacks page.</p>
      </EmptyState>
    );
  }
  if (machines.data && machineList.length === 0) {
    return (
      <>
        <PageHeader title="Forge" />
        <EmptyState title="Add a machine first">
          <p>A stack runs on a machine. Add one, and come back.</p>
          <Link href="/machines" class="button primary">
            Go to Machines
          </Link>
        </EmptyState>
      </>
    );
  }

  /** The refusal of a field's parameter (or of one of its parts), while the field still holds what was refused. */
  const fieldError = (param: string) => {
    if (!error?.param || !isPartOf(error.param, param)) return null;
    const changed = FIELDS_OF_PARAM[param]?.some((f) => submitted.values?.[f] !== form.values[f]);
    return changed ? null : error.message;
  };
  /** What the compatibility rules refuse of a choice, said at its field as well as in the panel. */
  const refused = (param: Check["param"]) =>
    machine && !compat.pending
      ? compat.result?.checks
          .filter((c) => c.level === "fail" && c.param === param)
          .map((c) => c.message)
          .join(" ") || null
      : null;
  const submit = async (e: Event) => {
    e.preventDefault();
    setSubmitted({ error: null, busy: true, values: form.values });
    try {
      const body = {
        name: (name.trim() || (editing ? editing.name : modelId.trim() || suggestedId || "stack")).slice(0, 100),
        machine,
        runtime,
        model: modelRef,
        model_sha256: fromUrl && sha256.trim() ? sha256.trim() : null,
        model_id: modelId.trim() || (editing ? null : suggestedId || null),
        harness: harness || null,
        harness_options:
          harness === "system-prompt"
            ? { prompt: systemPrompt }
            : harness === "router"
              ? { routes, ...(routeDefault.trim() ? { default: routeDefault.trim() } : {}) }
              : harness === "tools" && !parallelCalls
                ? { parallel_tool_calls: false }
                : undefined,
        orchestrator: orchestrator || null,
        orchestrator_options:
          orchestrator === "refine" ? { rounds } : orchestrator === "vote" ? { samples, ...(sampleTemperature.trim() ? { temperature: sampleTemperature.trim() } : {}) } : undefined,
        endpoint,
        max_context: !SIZED_CONTEXT.includes(runtime) || maxContext.trim() === "" ? null : /^\d+$/.test(maxContext.trim()) ? Number(maxContext.trim()) : (maxContext.trim() as unknown as number),
      };
      if (editing) {
        // Every field is sent; the relay changes (and records) only what differs. A layer of the same kind keeps the
        // options this form has no field for (a system prompt's temperature, a refine's prompts).
        const kept = (kind: string, was: string | null, stored: Record<string, unknown>, given: Record<string, unknown> | undefined) => (kind && kind === was ? { ...stored, ...given } : given);
        const storedParallel = editing.harness_options?.parallel_tool_calls;
        const edited = {
          ...body,
          machine: pinnedMachine ? undefined : machine,
          // A pin the form does not show (the model is not a URL) stays, unless the model changed.
          model_sha256: fromUrl ? body.model_sha256 : modelRef === editing.model_ref ? undefined : null,
          // Untouched, the id is left to the relay: it follows the model file's name when it did.
          model_id: modelId.trim() === editing.model_id ? undefined : modelId.trim() || null,
          harness_options: kept(
            harness,
            editing.harness,
            editing.harness_options ?? {},
            harness === "router"
              ? { routes, default: routeDefault.trim() || undefined }
              : harness === "tools"
                ? { parallel_tool_calls: parallelCalls === (storedParallel !== false) ? storedParallel : parallelCalls }
                : body.harness_options,
          ),
          orchestrator_options: kept(
            orchestrator,
            editing.orchestrator,
            editing.orchestrator_options ?? {},
            orchestrator === "vote" ? { samples, temperature: sampleTemperature.trim() || undefined } : body.orchestrator_options,
          ),
        };
        const saved = await client.call("PATCH /admin/v1/stacks/:id", { params: { id: editing.id }, body: edited });
        notify(saved.changed.length === 0 ? "Nothing changed." : saved.redeployed ? `Changes to ${saved.name} saved: it redeploys on its machine.` : `Changes to ${saved.name} saved.`);
        navigate(`/stacks/${editing.id}`);
        return;
      }
      const stack = await client.call("POST /admin/v1/stacks", { body: { ...body, org: session.org.id } });
      await client.call("POST /admin/v1/stacks/:id/deploy", { params: { id: stack.id } });
      notify(`${stack.name} created: deploying it.`);
      navigate(`/stacks/${stack.id}`);
    } catch (err) {
      setSubmitted({ error: err as ApiError, busy: false, values: form.values });
      return;
    }
    setSubmitted({ error: null, busy: false, values: null });
  };

  const selected = machineList.find((m) => m.id === machine);
  const awaiting = modelRef ? null : "Choose a model: the panel checks it against the machine.";
  // The verdict again above the button it decides (on a phone the panel comes after the form).
  const verdict = verdictOf(machine ? compat.result : null, awaiting);
  const firstFailure = compat.result?.checks.find((c) => c.level === "fail")?.message ?? "";
  const fromUrl = /^https?:\/\//i.test(modelRef);
  const customShown = choice === CUSTOM || (!models.length && choice === "");
  return (
    <>
      {editing ? (
        <PageHeader title={`Edit ${editing.name}`} subtitle="Change any layer; the compatibility panel answers as you go." />
      ) : (
        <PageHeader title="Forge" subtitle="Build a stack layer by layer: machine, runtime, model, then the optional layers and the endpoint." />
      )}
      {editing && (editing.state === "deployed" || editing.state === "deploying") && (
        <Notice tone="info">
          This stack is {editing.state}. Its name and endpoint change at once; a change to its runtime, model, model id or layers redeploys it on its machine, and it answers again once deployed.
          To move it to another machine, undeploy it first.
        </Notice>
      )}
      <div class="forge">
        <form class="card forge-form" onSubmit={submit} noValidate>
          {error && !error.param && <Notice tone="error">{error.message}</Notice>}
          <fieldset>
            <legend>1 · Machine</legend>
            <Field id="forge-machine" label="Machine" error={fieldError("machine") ?? refused("machine")}>
              <select id="forge-machine" {...form.choice("machine")} disabled={pinnedMachine}>
                {machineList.map((m) => (
                  <option key={m.id} value={m.id}>
                    {m.name} ({m.state}
                    {m.hardware ? `, ${m.hardware.os}, ${formatBytes(m.hardware.memory_bytes)} RAM` : ""})
                  </option>
                ))}
              </select>
            </Field>
            {selected && selected.state !== "online" && <p class="hint">This machine is {selected.state}: its stacks deploy when it connects.</p>}
          </fieldset>
          <fieldset>
            <legend>2 · Runtime</legend>
            <div class="choices" role="radiogroup" aria-label="Runtime" aria-describedby={refused("runtime") ? "forge-runtime-error" : undefined}>
              {RUNTIMES.map((r) => (
                <label key={r.kind} class={`choice ${runtime === r.kind ? "selected" : ""}`}>
                  <input
                    type="radio"
                    name="runtime"
                    value={r.kind}
                    checked={runtime === r.kind}
                    onChange={() => {
                      form.set("runtime", r.kind);
                      form.set("choice", "");
                    }}
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
          <fieldset>
            <legend>3 · Model</legend>
            <Field id="forge-model" label="Model" error={fieldError("model") ?? (customShown ? null : refused("model"))}>
              <select id="forge-model" value={choice || (models.length ? "" : CUSTOM)} onChange={(e) => form.set("choice", e.currentTarget.value)}>
                <option value="">Choose a model…</option>
                {models.map((m) => (
                  <option key={m.ref} value={m.ref}>
                    {m.label}
                  </option>
                ))}
                <option value={CUSTOM}>{runtime === "openai" ? "The server's model name…" : "Custom: a path, URL or hf: reference…"}</option>
              </select>
            </Field>
            {customShown && (
              <Field
                id="forge-custom"
                label={runtime === "openai" ? "Model name on the server" : "Model reference"}
                hint={runtime === "gguf" ? "A .gguf path on the machine, an https:// URL, or hf:owner/repo/file.gguf" : runtime === "openai" ? "e.g. llama3.1:8b" : "A Hugging Face repository id, e.g. Qwen/Qwen2.5-7B-Instruct"}
                error={custom.trim() ? refused("model") : null}
              >
                <input id="forge-custom" {...form.text("custom")} aria-describedby={describedBy("forge-custom", custom.trim() ? refused("model") : null)} spellcheck={false} />
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
            {SIZED_CONTEXT.includes(runtime) && (
              <Field
                id="forge-max-context"
                label="Context size (tokens)"
                hint="The most tokens of prompt and answer per request. More takes more memory: the compatibility panel follows it. Empty: the machine's default (4,096 unless its agent says otherwise); never more than the model was trained for."
                error={fieldError("max_context") ?? refused("max_context")}
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
                  aria-describedby={describedBy("forge-max-context", fieldError("max_context") ?? refused("max_context"))}
                />
              </Field>
            )}
          </fieldset>
          <fieldset>
            <legend>4 · Layers (optional)</legend>
            <div class="row">
              <Field id="forge-harness" label="Harness" hint={HARNESS_WORDS[harness]} error={refused("harness")}>
                <select id="forge-harness" {...form.choice("harness")} aria-describedby={describedBy("forge-harness", refused("harness"))}>
                  <option value="">None</option>
                  <option value="system-prompt">System prompt</option>
                  <option value="tools">Tools</option>
                  <option value="router">Router</option>
                </select>
              </Field>
              {harness === "system-prompt" && (
                <Field id="forge-system-prompt" label="System prompt" hint="Used when a request brings no system message of its own." error={fieldError("harness_options.prompt")}>
                  <textarea
                    id="forge-system-prompt"
                    rows={3}
                    {...form.text("systemPrompt")}
                    aria-describedby={describedBy("forge-system-prompt", fieldError("harness_options.prompt"))}
                  />
                </Field>
              )}
              {harness === "tools" && (
                <Field id="forge-parallel-calls" label="Tool calls" hint="When a request does not say.">
                  <label class="check-row">
                    <input id="forge-parallel-calls" type="checkbox" {...form.check("parallelCalls")} aria-describedby="forge-parallel-calls-hint" /> Several in one answer
                  </label>
                </Field>
              )}
              {harness === "router" && (
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
              <Field id="forge-orchestrator" label="Orchestrator" hint={ORCHESTRATOR_WORDS[orchestrator]} error={refused("orchestrator")}>
                <select id="forge-orchestrator" {...form.choice("orchestrator")} aria-describedby={describedBy("forge-orchestrator", refused("orchestrator"))}>
                  <option value="">None</option>
                  <option value="refine">Refine</option>
                  <option value="vote">Vote</option>
                </select>
              </Field>
              {orchestrator === "refine" && (
                <Field id="forge-rounds" label="Rounds" hint="Critique and revise this many times after the draft (1 to 4)." error={fieldError("orchestrator_options.rounds")}>
                  <input id="forge-rounds" type="number" min={1} max={4} {...form.text("rounds")} aria-describedby={describedBy("forge-rounds", fieldError("orchestrator_options.rounds"))} />
                </Field>
              )}
              {orchestrator === "vote" && (
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
          <fieldset>
            <legend>5 · Endpoint</legend>
            <label class="check-row">
              <input type="checkbox" {...form.check("endpoint")} /> Expose through the API
            </label>
            <div class="row">
              <Field id="forge-model-id" label="Model id" hint="What clients pass as `model`." error={fieldError("model_id")}>
                <input id="forge-model-id" {...form.text("modelId")} placeholder={suggestedId} disabled={!endpoint} spellcheck={false} />
              </Field>
              <Field id="forge-name" label="Stack name" error={fieldError("name")}>
                <input id="forge-name" {...form.text("name")} placeholder={modelId || suggestedId || "my-stack"} />
              </Field>
            </div>
          </fieldset>
          {error?.param && !Object.keys(FIELDS_OF_PARAM).some((f) => isPartOf(error.param!, f)) && <Notice tone="error">{error.message}</Notice>}
          <p class={`verdict-line ${verdict.tone}`} data-testid="forge-verdict" aria-hidden="true">
            {verdict.tone === "fail" ? `✕ ${verdict.verdict} ${firstFailure}` : verdict.verdict}
          </p>
          <div class="form-actions">
            <button type="submit" class="button primary" disabled={busy || !machine || !modelRef || compat.result?.ok === false}>
              {editing ? (busy ? "Saving…" : "Save changes") : busy ? "Creating…" : "Create and deploy"}
            </button>
            {editing && (
              <Link href={`/stacks/${editing.id}`} class="button secondary">
                Cancel
              </Link>
            )}
          </div>
        </form>
        <aside class="forge-side">
          <CompatibilityPanel result={machine ? compat.result : null} pending={compat.pending} awaiting={awaiting} />
        </aside>
      </div>
    </>
  );
}
