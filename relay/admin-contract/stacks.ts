import { logQuery, type LogPage } from "./logs.js";
import { z } from "zod";
import { RUNTIME_CAPABILITIES, type RuntimeKind } from "../../proto/runtimes/runtime-capabilities.js";
import { answer, route } from "./route.js";
import { flag, layerOptions, modelIdText, must, nameText, optionalText, orgRef, requiredText, says } from "./fields.js";
import { listQuery, type List, type Page } from "./list.js";

export type { RuntimeKind };
/** The runtimes a stack can use: the kinds of proto's capability table. */
const RUNTIME_KINDS = Object.keys(RUNTIME_CAPABILITIES) as [RuntimeKind, ...RuntimeKind[]];

/** One verdict of the compatibility rules. */
export interface Check {
  topic: "runtime" | "format" | "memory" | "disk" | "endpoint" | "layers";
  level: "ok" | "warn" | "fail";
  message: string;
  /** The choice it is about, named as stack create names it: where a form shows it. */
  param: "machine" | "runtime" | "model" | "max_context" | "harness" | "orchestrator" | "endpoint";
}

/** Whether a stack can run on its machine: `ok` false when a check fails, null while the machine's hardware, or the model (none given yet), is unknown. */
export interface Compatibility {
  ok: boolean | null;
  checks: Check[];
  /** The APIs the stack answers: "chat" (chat completions, Responses, Messages), "embeddings" and "rerank". */
  serves: ("chat" | "embeddings" | "rerank")[];
}

/** One step of a deployment. `detail` is the step's progress (`stage`, `done_bytes`, `total_bytes`, `bytes_per_second`, `eta_seconds`) or result. */
export interface DeploymentStep {
  seq: number;
  kind: string;
  state: "pending" | "running" | "succeeded" | "failed";
  detail: Record<string, unknown> | null;
  error: string | null;
  started_at: number | null;
  finished_at: number | null;
}

/** One run of a stack's deploy sequence. */
export interface Deployment {
  id: string;
  stack_id: string;
  state: "running" | "succeeded" | "failed";
  error: string | null;
  started_at: number;
  finished_at: number | null;
  steps: DeploymentStep[];
}

/** A layer option's value (a router's `routes` are rules). */
export type LayerOptionValue = string | number | boolean | Record<string, unknown>[];

/** Stack states: `draft` → `deploying` → `deployed` or `failed`; `deployed` → `undeploying` → `draft`. */
export type StackState = "draft" | "deploying" | "deployed" | "failed" | "undeploying";

/** When a stack's model is loaded: `always` (while deployed), or `on_demand` (by its first request, unloaded when idle). */
export const STACK_RESIDENCIES = ["always", "on_demand"] as const;
export type StackResidency = (typeof STACK_RESIDENCIES)[number];

/** A stack: machine + runtime + model (+ harness, orchestrator, endpoint), with its compatibility and latest deployment. */
export interface Stack {
  id: string;
  org_id: string;
  name: string;
  machine_id: string;
  runtime: RuntimeKind;
  model_ref: string;
  /** The SHA-256 the model file is pinned to, or null. */
  model_sha256: string | null;
  /** An http(s):// model with no SHA-256 pinned: whatever the server sends is served. */
  model_unverified: boolean;
  /** What clients pass as `model`. */
  model_id: string;
  harness: string | null;
  /** The harness's options, e.g. the system prompt. */
  harness_options: Record<string, LayerOptionValue>;
  orchestrator: string | null;
  /** The orchestrator's options, e.g. its rounds or samples. */
  orchestrator_options: Record<string, LayerOptionValue>;
  has_endpoint: boolean;
  state: StackState;
  state_error: string | null;
  /** Context size the runtime serves, in tokens, once deployed. */
  context_size: number | null;
  /** The most tokens of context per request the stack asks its runtime for (GGUF and vLLM); null: the machine's default. GGUF serves no more than the model was trained for; vLLM refuses more (the compatibility rules say so when the model's length is known). */
  max_context: number | null;
  /** Hours the request log keeps this stack's prompts and answers (1 to 720); null: it keeps none. */
  capture_hours: number | null;
  /** `always`: its model is loaded while it is deployed; `on_demand`: loaded by its first request, unloaded when idle. */
  residency: StackResidency;
  /** An on-demand stack's seconds without a request before its model unloads (0 to 604,800; 0: only when the machine needs the memory). Kept, and unused, by an `always` stack. */
  idle_unload_s: number;
  /**
   * The runtime's state as its machine last reported it: `loading` (requests get 503, except an on-demand stack's,
   * which wait for its load), `ready`, `failed` (until redeployed), and an on-demand stack's `unloaded` (its next
   * request loads it) and `unloading`; null before any report.
   */
  runtime_state: string | null;
  runtime_error: string | null;
  deployed_at: number | null;
  created_at: number;
  updated_at: number;
  compatibility: Compatibility;
  deployment: Deployment | null;
  /**
   * The organization's other stacks with an endpoint for the same `model_id` (replicas): while deployed, requests
   * for the model id are shared among them (a loaded one first, then the least busy machine, equals in turn).
   */
  replicas: { id: string; name: string; machine_id: string; state: StackState; requests_last_hour: number }[];
  /**
   * With replicas: the requests sent to this stack in the last hour (answered, failed or refused once it was chosen),
   * beside each replica's `requests_last_hour` (their shares); null without replicas.
   */
  requests_last_hour: number | null;
}

/** A stack as an edit left it: `changed` names the fields that differed; `redeployed` when it is being redeployed with them. */
export type StackChange = Stack & { changed: string[]; redeployed: boolean };

/** What a deletion answers. */
export interface DeletedStack {
  id: string;
  deleted: true;
}

/** A model of the relay's catalog, offered by the Forge. */
export interface CatalogModel {
  ref: string;
  /** The model id suggested for clients. */
  model_id: string;
  label: string;
  runtime: RuntimeKind;
  size_bytes: number | null;
}

const runtime = () =>
  z.enum(RUNTIME_KINDS, {
    error: (iss) =>
      typeof iss.input === "string" && iss.input !== ""
        ? `Unknown runtime '${iss.input}'; expected one of ${RUNTIME_KINDS.join(", ")}.`
        : must("a string").error(iss),
  });

/**
 * A SHA-256 of 64 hex digits (any case, `:` between bytes allowed), lowercased; null or empty: none. Absent is
 * none too, or, for an edit (`keepAbsent`), left out (undefined: unchanged).
 */
const sha256 = (keepAbsent = false) =>
  z
    .string(says("model_sha256 is a SHA-256 digest: 64 hex digits."))
    .nullish()
    .transform((v) => (v === undefined && keepAbsent ? undefined : v ? v.replaceAll(":", "").toLowerCase() : null))
    .refine((hex) => hex == null || /^[0-9a-f]{64}$/.test(hex), says("model_sha256 is a SHA-256 digest: 64 hex digits."));

/** The layers of a stack being built. */
const layers = {
  harness: optionalText(),
  harness_options: layerOptions(),
  orchestrator: optionalText(),
  orchestrator_options: layerOptions(),
  /** Exposed through the API: absent means yes, `false` or null leaves the Endpoint layer out. */
  endpoint: flag()
    .nullish()
    .transform((e) => e === undefined || e === true),
};

/** The longest a stack's requests' prompts and answers are kept: 30 days. */
export const MAX_CAPTURE_HOURS = 720;
const CAPTURE = must(`a whole number of hours from 1 to ${MAX_CAPTURE_HOURS}, or null (keep no prompt or answer)`);
/** Hours the request log keeps prompts and answers, or null (none: the default). */
const captureHours = () => z.number(CAPTURE).int(CAPTURE).min(1, CAPTURE).max(MAX_CAPTURE_HOURS, CAPTURE).nullable().optional();

/** The least and most tokens of context a stack may ask of its runtime. */
export const MIN_CONTEXT = 128;
export const MAX_CONTEXT = 1_048_576;
const CONTEXT = must(`a whole number of tokens from ${MIN_CONTEXT} to ${MAX_CONTEXT.toLocaleString("en-US")}, or null (the machine's default)`);
/** The most tokens of context per request a stack's runtime serves (GGUF and vLLM), or null: the machine's default. */
const maxContext = () => z.number(CONTEXT).int(CONTEXT).min(MIN_CONTEXT, CONTEXT).max(MAX_CONTEXT, CONTEXT).nullable().optional();

/** The longest idle time before an on-demand stack unloads: a week. */
export const MAX_IDLE_UNLOAD_S = 604_800;
const IDLE = must(`a whole number of seconds from 0 to ${MAX_IDLE_UNLOAD_S.toLocaleString("en-US")} (0: unloaded only when the memory is needed)`);
/** Seconds without a request before an on-demand stack unloads (absent when a stack is made: 600, 10 minutes). */
const idleUnloadS = () => z.number(IDLE).int(IDLE).min(0, IDLE).max(MAX_IDLE_UNLOAD_S, IDLE).optional();
/** `always` or `on_demand`. */
const residency = () => z.enum(STACK_RESIDENCIES, must(`'always' or 'on_demand'`)).optional();

/** What the stacks' list sorts by. */
export const STACK_SORTS = ["name", "state", "model_id", "runtime", "created_at", "deployed_at"] as const;

export const STACK_ROUTES = {
  /** The organization's stacks, a page at a time: searched in names, model ids, models and ids; `machine` keeps one machine's. */
  "GET /admin/v1/stacks": route({
    query: z.strictObject({ org: orgRef(), machine: z.string(must("a machine id")).optional(), ...listQuery(STACK_SORTS, ["draft", "deploying", "deployed", "failed", "undeploying"]) }),
    response: answer<Page<Stack>>(),
  }),
  /** The last lines of the stack's runtime log on its machine (admins), read over the machine's link. */
  "GET /admin/v1/stacks/:id/log": route({ query: logQuery(), response: answer<LogPage>() }),
  "GET /admin/v1/stacks/:id": route({ response: answer<Stack>() }),
  /** Creates a stack (admins); refused with the reasons when the compatibility rules fail it on its machine. */
  "POST /admin/v1/stacks": route({
    status: 201,
    body: z.strictObject({
      org: orgRef(),
      machine: requiredText(),
      runtime: runtime(),
      /** A GGUF path, an https:// URL or hf:owner/repo/file.gguf (vLLM and MLX: a hub repository id). */
      model: requiredText(),
      model_sha256: sha256(),
      ...layers,
      /** Empty or absent: the model file's name without `.gguf`. */
      model_id: modelIdText(),
      name: nameText(),
      capture_hours: captureHours(),
      max_context: maxContext(),
      /** Absent: `always`. `on_demand` is refused for the `openai` runtime (an existing server is always on). */
      residency: residency(),
      /** Absent: 600. */
      idle_unload_s: idleUnloadS(),
    }),
    response: answer<Stack>(),
  }),
  /**
   * The compatibility of a stack being built (the Forge's panel), by the rules stack create and deploy apply; `stack`:
   * the stack being edited, whose own memory on its machine is not counted as another's.
   */
  "POST /admin/v1/compatibility": route({
    body: z.strictObject({ org: orgRef(), machine: optionalText(), runtime: runtime(), model: optionalText(), ...layers, max_context: maxContext(), residency: residency(), stack: optionalText() }),
    response: answer<Compatibility>(),
  }),
  "GET /admin/v1/catalog": route({ response: answer<List<CatalogModel>>() }),
  /**
   * Changes a stack (admins); a field left out is kept. `name`, `endpoint` and `capture_hours` change at once, in any state.
   * The rest (machine, runtime, model, model_sha256, model_id, max_context, the layers and their options,
   * residency, idle_unload_s) is what the machine is sent: a draft or failed stack just keeps it (deploy it to use it), a
   * deployed one is redeployed on its machine with it (it answers again once deployed; a new residency or idle
   * time alone keeps its runtime, loaded or not), and a stack deploying or undeploying refuses it (409 `conflict`)
   * until it has settled. A deployed stack cannot move to another machine: undeploy it first.
   * Checked by the rules stack create applies. `model_id` null: the model file's name.
   */
  "PATCH /admin/v1/stacks/:id": route({
    body: z.strictObject({
      name: nameText().optional(),
      machine: requiredText().optional(),
      runtime: runtime().optional(),
      model: requiredText().optional(),
      model_sha256: sha256(true),
      model_id: modelIdText(),
      harness: optionalText(),
      harness_options: layerOptions(),
      orchestrator: optionalText(),
      orchestrator_options: layerOptions(),
      endpoint: flag().optional(),
      capture_hours: captureHours(),
      max_context: maxContext(),
      residency: residency(),
      idle_unload_s: idleUnloadS(),
    }),
    response: answer<StackChange>(),
  }),
  /**
   * Deletes a stack (admins) with its deployments: a draft or failed one (a failed one is undeployed from its
   * machine first). 409 `conflict` for a stack that is deployed, deploying or undeploying: undeploy it first.
   * Keys restricted to it keep its id, and serve nothing through it. Final.
   */
  "DELETE /admin/v1/stacks/:id": route({ response: answer<DeletedStack>() }),
  /** Starts deploying (admins); follow it through the stack's `deployment` and the event stream. */
  "POST /admin/v1/stacks/:id/deploy": route({ response: answer<Stack>() }),
  /** Stops serving (admins). */
  "POST /admin/v1/stacks/:id/undeploy": route({ response: answer<Stack>() }),
  /**
   * Loads a deployed on-demand stack's model on its machine now (admins), wherever the machine is linked, ahead of
   * its first request; answers once loaded (its idle time runs from then). 503 `insufficient_memory` when the
   * machine has no room (naming what holds it), 409 `conflict` for an `always` stack or one not deployed.
   */
  "POST /admin/v1/stacks/:id/load": route({ response: answer<Stack>() }),
  /** Unloads a deployed on-demand stack's model now (admins), once the requests it serves have ended; its next request loads it again. */
  "POST /admin/v1/stacks/:id/unload": route({ response: answer<Stack>() }),
} as const;
