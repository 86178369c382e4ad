import type { CommandModule } from "yargs";
import { RUNTIME_CAPABILITIES, type RuntimeKind } from "../../../proto/runtimes/runtime-capabilities.js";
import type { DeploymentStep, Stack } from "../../../relay/admin-contract/index.js";
import { adminCall, type AdminTarget } from "../../admin-client.js";
import { adminEvents, type FollowedEvent } from "../../admin-events.js";
import { CliError, EXIT } from "../../cli-error.js";
import { humanBytes, keyValues, print, table } from "../../output.js";
import { allPages, adminOptions, normalizeModelRef, target, type AdminArgs } from "./common.js";

/** A deploy step's progress, as the relay reports it in `detail` while it runs. */
interface StepProgress {
  stage?: string;
  done_bytes?: number;
  total_bytes?: number;
  bytes_per_second?: number;
  eta_seconds?: number;
}

/** The stack's state, with its runtime's trouble when the machine reported some (restarting, crash loop). */
const stateText = (s: Stack) =>
  s.state === "deployed" && s.runtime_state && s.runtime_state !== "ready"
    ? `deployed, runtime ${s.runtime_state}${s.runtime_error ? ` (${s.runtime_error.split("\n")[0]})` : ""}`
    : s.state_error
      ? `${s.state} (${s.state_error})`
      : s.state;

/** `key=value` options as an object (the relay checks names, types and ranges for the layer's kind). */
function keyValueOptions(pairs: string[], flag: string): Record<string, string> | undefined {
  if (pairs.length === 0) return undefined;
  return Object.fromEntries(
    pairs.map((pair) => {
      const i = pair.indexOf("=");
      if (i < 1) throw new CliError(`${flag} takes key=value, got '${pair}'.`, EXIT.usage);
      return [pair.slice(0, i), pair.slice(i + 1)];
    }),
  );
}

/** How the machine checks the model file: against a pinned SHA-256, the hub's digest, or not at all. */
const modelCheck = (s: Stack) =>
  s.model_sha256 ? "pinned sha256" : s.model_unverified ? "unverified" : s.model_ref.startsWith("hf:") ? "hub digest" : "local file";

/** When the stack's model is loaded, as a person reads it. */
const residencyText = (s: Stack) =>
  s.residency === "always"
    ? "always loaded"
    : s.idle_unload_s > 0
      ? `on demand, unloads after ${s.idle_unload_s} s idle`
      : "on demand, unloads only when the machine needs the memory";

/** The same, short, for a list. */
const residencyColumn = (s: Stack) => (s.residency === "always" ? "always" : s.idle_unload_s > 0 ? `on demand (${s.idle_unload_s} s idle)` : "on demand (until memory is needed)");

/** `--residency` as the API takes it: the CLI's `on-demand` is the API's `on_demand`. */
const residencyOf = (v: "always" | "on-demand" | undefined) => (v === "on-demand" ? ("on_demand" as const) : v);

const describeStack = (s: Stack) =>
  keyValues([
    ["id", s.id],
    ["name", s.name],
    ["state", stateText(s)],
    ["machine", s.machine_id],
    ["runtime", s.runtime],
    [
      "model",
      `${s.model_ref}${s.model_sha256 ? ` (sha256 ${s.model_sha256} pinned)` : s.model_unverified ? " (unverified: no SHA-256 pinned, whatever the server sends is served; pin one with --model-sha256)" : ""}`,
    ],
    ["model id", s.has_endpoint ? s.model_id : `${s.model_id} (no endpoint: not reachable through the API)`],
    ...(s.has_endpoint && s.replicas.length ? [["replicas", replicasText(s)] as [string, string]] : []),
    ["serves", servedText(s.compatibility.serves)],
    ["harness", layerLine(s.harness, s.harness_options)],
    ["orchestrator", layerLine(s.orchestrator, s.orchestrator_options)],
    ["context", `${s.max_context === null ? "the machine's default" : `${s.max_context.toLocaleString("en-US")} tokens asked`}${s.context_size ? `; serves ${s.context_size.toLocaleString("en-US")}` : ""}`],
    ["capture", s.capture_hours === null ? "none (the request log keeps no prompt or answer)" : `prompts and answers kept ${s.capture_hours} h in the request log`],
    ["residency", residencyText(s)],
    ["compatible", s.compatibility.checks.map((c) => `${c.level}: ${c.message}`).join("; ")],
  ]);

/** The other stacks serving a stack's model id, and what that means for its requests now. */
/** The APIs a stack answers, in words: "chat only", "chat and embeddings", "chat, embeddings and rerank", "rerank only". */
function servedText(serves: Stack["compatibility"]["serves"]): string {
  if (serves.length === 0) return "nothing (no API reaches its model)";
  return serves.length === 1 ? `${serves[0]} only` : `${serves.slice(0, -1).join(", ")} and ${serves.at(-1)}`;
}

function replicasText(s: Stack): string {
  const serving = s.replicas.filter((r) => r.state === "deployed" || r.state === "deploying");
  const names = s.replicas.map((r) => `${r.name} on ${r.machine_id} (${r.state})`).join(", ");
  if (s.state !== "deployed" && s.state !== "deploying") return `also served by ${names}${serving.length ? `: they go on serving ${s.model_id}` : ""}`;
  return `also served by ${names}${serving.length ? ": requests are shared" : ""}`;
}

/** `--capture-hours`, `--max-context` or `--idle-unload` as the API takes it: a whole number; anything else is sent as given, for the relay to say what it wants. */
const wholeNumber = (v: string | undefined): number | undefined => (v === undefined ? undefined : /^\d+$/.test(v) ? Number(v) : (v as unknown as number));

/** A layer and its options, as `kind (key=value, …)`, or `none`. */
function layerLine(kind: string | null, options: Record<string, unknown> | undefined): string {
  if (!kind) return "none";
  const given = Object.entries(options ?? {});
  return given.length ? `${kind} (${given.map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(", ")})` : kind;
}

function stepLine(step: DeploymentStep): string {
  const d = step.detail as StepProgress | null;
  const rate = d?.bytes_per_second ? ` ${humanBytes(d.bytes_per_second)}/s` : "";
  const eta = d?.eta_seconds ? `, ${d.eta_seconds}s left` : "";
  const bytes = d?.total_bytes && step.state === "running" ? ` ${humanBytes(d.done_bytes ?? 0)}/${humanBytes(d.total_bytes)} ${bar((d.done_bytes ?? 0) / d.total_bytes)}${rate}${eta}` : "";
  return `${step.kind}: ${step.state}${d?.stage && step.state === "running" ? ` (${d.stage})` : ""}${bytes}${step.error ? ` - ${step.error}` : ""}`;
}

function bar(fraction: number, width = 20): string {
  const n = Math.max(0, Math.min(width, Math.round(fraction * width)));
  return `[${"#".repeat(n)}${".".repeat(width - n)}] ${Math.round(fraction * 100)}%`;
}

/**
 * Follows a deployment until the stack is `deployed` or `failed`, printing step progress to stderr.
 * The relay's event stream says when the stack changed; each change is fetched and shown.
 */
async function follow(t: AdminTarget, id: string, quiet: boolean): Promise<Stack> {
  const get = () => adminCall(t, "GET /admin/v1/stacks/:id", { params: { id } });
  let s = await get();
  const controller = new AbortController();
  const events = adminEvents(t, s.org_id, controller.signal);
  let last = "";
  try {
    // Listen first, then read the stack again: no change after this read goes unheard.
    await events.next();
    s = await get();
    let next: Promise<IteratorResult<FollowedEvent>> = events.next();
    for (;;) {
      const lines = (s.deployment?.steps ?? []).map(stepLine).join("\n");
      if (!quiet && lines !== last) process.stderr.write(lines + "\n");
      last = lines;
      if (s.state === "deployed" || s.state === "failed" || s.state === "draft") return s;
      for (;;) {
        const ev = await next;
        next = events.next();
        if (ev.done) throw new CliError("The relay's event stream ended before the deploy did.");
        if (ev.value.event === "reconnected" || (ev.value.event === "stack" && ev.value.data.stack_id === id)) break;
      }
      s = await get();
    }
  } finally {
    controller.abort();
    await events.return(undefined);
  }
}

/** `makina admin stack create`. */
const createCommand: CommandModule = {
  command: "create",
  describe: "Create a stack (machine + runtime + model [+ harness, orchestrator, endpoint])",
  builder: (b) =>
    adminOptions(
      b
        .option("org", { type: "string", demandOption: true })
        .option("name", { type: "string", demandOption: true })
        .option("machine", { type: "string", demandOption: true })
        .option("runtime", { choices: Object.keys(RUNTIME_CAPABILITIES) as RuntimeKind[], demandOption: true })
        .option("model", { type: "string", demandOption: true, describe: "GGUF path, https:// URL or hf:owner/repo/file.gguf" })
        .option("model-sha256", { type: "string", describe: "Pin the model file's SHA-256: the machine refuses any other file" })
        .option("model-id", { type: "string", describe: "The id clients pass as `model` (default: the model file's name)" })
        .option("harness", { type: "string", describe: "Harness layer: system-prompt, tools or router (see docs/layers.md)" })
        .option("harness-option", { type: "string", array: true, describe: "An option of the harness, key=value (repeat it), e.g. prompt='You are terse.'" })
        .option("orchestrator", { type: "string", describe: "Orchestrator layer: refine or vote (see docs/layers.md)" })
        .option("orchestrator-option", { type: "string", array: true, describe: "An option of the orchestrator, key=value (repeat it), e.g. rounds=2" })
        .option("endpoint", { type: "boolean", default: true, describe: "Expose through the API (--no-endpoint to omit the layer)" })
        .option("capture-hours", { type: "string", describe: "Keep its requests' prompts and answers in the request log for so many hours (1 to 720); default none" })
        .option("max-context", { type: "string", describe: "Tokens of context per request its runtime serves (GGUF, vLLM; 128 to 1048576); default: the machine's" })
        .option("residency", { choices: ["always", "on-demand"] as const, describe: "When its model is loaded: always (while deployed; the default) or on-demand (by its first request, unloaded when idle; not for the openai runtime)" })
        .option("idle-unload", { type: "string", describe: "An on-demand stack's seconds without a request before its model unloads (0 to 604800; 0: only when the machine needs the memory); default 600" }),
    ),
  handler: async (argv) => {
    const a = argv as unknown as AdminArgs & { org: string; name: string; machine: string; runtime: RuntimeKind; model: string; modelSha256?: string; modelId?: string; harness?: string; harnessOption?: string[]; orchestrator?: string; orchestratorOption?: string[]; endpoint: boolean; captureHours?: string; maxContext?: string; residency?: "always" | "on-demand"; idleUnload?: string };
    const s = await adminCall(target(a), "POST /admin/v1/stacks", {
      body: {
        org: a.org,
        name: a.name,
        machine: a.machine,
        runtime: a.runtime,
        model: normalizeModelRef(a.model),
        model_sha256: a.modelSha256,
        model_id: a.modelId,
        harness: a.harness,
        harness_options: keyValueOptions(a.harnessOption ?? [], "--harness-option"),
        orchestrator: a.orchestrator,
        orchestrator_options: keyValueOptions(a.orchestratorOption ?? [], "--orchestrator-option"),
        endpoint: a.endpoint,
        capture_hours: wholeNumber(a.captureHours),
        max_context: wholeNumber(a.maxContext),
        residency: residencyOf(a.residency),
        idle_unload_s: wholeNumber(a.idleUnload),
      },
    });
    print(a, s, () => describeStack(s));
  },
};

/** `makina admin stack update <id>`. */
const updateCommand: CommandModule = {
  command: "update <id>",
  aliases: ["edit"],
  describe: "Change a stack (also: edit): its name and endpoint at once; what its machine builds on, and its residency, is redeployed when the stack is deployed",
  builder: (b) =>
    adminOptions(
      b
        .positional("id", { type: "string", demandOption: true })
        .option("name", { type: "string" })
        .option("machine", { type: "string", describe: "Another machine (a deployed stack must be undeployed first)" })
        .option("runtime", { choices: Object.keys(RUNTIME_CAPABILITIES) as RuntimeKind[] })
        .option("model", { type: "string", describe: "GGUF path, https:// URL or hf:owner/repo/file.gguf" })
        .option("model-sha256", { type: "string", describe: "Pin the model file's SHA-256, or none" })
        .option("model-id", { type: "string", describe: "The id clients pass as `model`, or default (the model file's name)" })
        .option("harness", { type: "string", describe: "Harness layer (system-prompt, tools, router), or none" })
        .option("harness-option", { type: "string", array: true, describe: "An option of the harness, key=value (repeat it; they replace the harness's options)" })
        .option("orchestrator", { type: "string", describe: "Orchestrator layer (refine, vote), or none" })
        .option("orchestrator-option", { type: "string", array: true, describe: "An option of the orchestrator, key=value (repeat it; they replace its options)" })
        .option("endpoint", { type: "boolean", describe: "Expose through the API (--no-endpoint: not reachable through the API)" })
        .option("capture-hours", { type: "string", describe: "Keep its requests' prompts and answers for so many hours (1 to 720), or none" })
        .option("max-context", { type: "string", describe: "Tokens of context per request its runtime serves (GGUF, vLLM), or default (the machine's)" })
        .option("residency", { choices: ["always", "on-demand"] as const, describe: "When its model is loaded: always, or on-demand (by its first request, unloaded when idle); a deployed stack keeps its runtime" })
        .option("idle-unload", { type: "string", describe: "An on-demand stack's seconds without a request before its model unloads (0 to 604800; 0: only when the machine needs the memory)" })
        .option("wait", { type: "boolean", default: false, describe: "When it is redeployed, follow progress until deployed or failed" }),
    ),
  handler: async (argv) => {
    const a = argv as unknown as AdminArgs & {
      id: string;
      name?: string;
      machine?: string;
      runtime?: RuntimeKind;
      model?: string;
      modelSha256?: string;
      modelId?: string;
      harness?: string;
      harnessOption?: string[];
      orchestrator?: string;
      orchestratorOption?: string[];
      endpoint?: boolean;
      captureHours?: string;
      maxContext?: string;
      residency?: "always" | "on-demand";
      idleUnload?: string;
      wait: boolean;
    };
    /** `none` (or `default`) clears a field; absent keeps it. */
    const orNull = (v: string | undefined, word: string) => (v === undefined ? undefined : v === word ? null : v);
    const t = target(a);
    const changed = await adminCall(t, "PATCH /admin/v1/stacks/:id", {
      params: { id: a.id },
      body: {
        name: a.name,
        machine: a.machine,
        runtime: a.runtime,
        model: a.model === undefined ? undefined : normalizeModelRef(a.model),
        model_sha256: orNull(a.modelSha256, "none"),
        model_id: orNull(a.modelId, "default"),
        harness: orNull(a.harness, "none"),
        harness_options: keyValueOptions(a.harnessOption ?? [], "--harness-option"),
        orchestrator: orNull(a.orchestrator, "none"),
        orchestrator_options: keyValueOptions(a.orchestratorOption ?? [], "--orchestrator-option"),
        endpoint: a.endpoint,
        capture_hours: a.captureHours === "none" ? null : wholeNumber(a.captureHours),
        max_context: a.maxContext === "default" ? null : wholeNumber(a.maxContext),
        residency: residencyOf(a.residency),
        idle_unload_s: wholeNumber(a.idleUnload),
      },
    });
    const s = a.wait && changed.redeployed ? await follow(t, a.id, a.json) : changed;
    const what = changed.changed.length ? `Changed ${changed.changed.join(", ")}${changed.redeployed ? "; redeploying" : ""}.` : "Nothing changed.";
    print(a, { ...s, changed: changed.changed, redeployed: changed.redeployed }, () => `${what}\n${describeStack(s)}`);
    if (a.wait && changed.redeployed && s.state !== "deployed") throw new CliError(`Redeploy of ${a.id} ended ${s.state}${s.state_error ? `: ${s.state_error}` : ""}.`);
  },
};

export const stackCommand: CommandModule = {
  command: "stack <command>",
  describe: "Manage stacks",
  builder: (y) =>
    y
      .command(createCommand)
      .command(updateCommand)
      .command({
        command: "delete <id>",
        describe: "Delete a draft or failed stack (undeploy a deployed one first)",
        builder: (b) => adminOptions(b.positional("id", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { id: string };
          const gone = await adminCall(target(a), "DELETE /admin/v1/stacks/:id", { params: { id: a.id } });
          print(a, gone, () => `Deleted ${gone.id}.`);
        },
      })
      .command({
        command: "deploy <id>",
        describe: "Deploy a stack to its machine",
        builder: (b) => adminOptions(b.positional("id", { type: "string", demandOption: true }).option("wait", { type: "boolean", default: false, describe: "Follow progress until deployed or failed" })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { id: string; wait: boolean };
          const t = target(a);
          let s = await adminCall(t, "POST /admin/v1/stacks/:id/deploy", { params: { id: a.id } });
          if (a.wait) s = await follow(t, a.id, a.json);
          print(a, s, () => describeStack(s));
          if (a.wait && s.state !== "deployed") throw new CliError(`Deploy of ${a.id} ended ${s.state}${s.state_error ? `: ${s.state_error}` : ""}.`);
        },
      })
      .command({
        command: "undeploy <id>",
        describe: "Stop serving a stack",
        builder: (b) => adminOptions(b.positional("id", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { id: string };
          const s = await adminCall(target(a), "POST /admin/v1/stacks/:id/undeploy", { params: { id: a.id } });
          print(a, s, () => describeStack(s));
        },
      })
      .command({
        command: "load <id>",
        describe: "Load an on-demand stack's model on its machine now, ahead of its first request",
        builder: (b) => adminOptions(b.positional("id", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { id: string };
          const s = await adminCall(target(a), "POST /admin/v1/stacks/:id/load", { params: { id: a.id } });
          print(a, s, () => `Loaded: ${s.model_id} is ready on ${s.machine_id}${s.idle_unload_s > 0 ? `, until ${s.idle_unload_s} s without a request` : ""}.`);
        },
      })
      .command({
        command: "unload <id>",
        describe: "Unload an on-demand stack's model now (its next request loads it again)",
        builder: (b) => adminOptions(b.positional("id", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { id: string };
          const s = await adminCall(target(a), "POST /admin/v1/stacks/:id/unload", { params: { id: a.id } });
          print(a, s, () => `Unloaded: ${s.model_id}'s memory on ${s.machine_id} is free; its next request loads it again.`);
        },
      })
      .command({
        command: "list",
        describe: "List stacks with their state",
        builder: (b) => adminOptions(b.option("org", { type: "string", demandOption: true })),
        handler: async (argv) => {
          const a = argv as unknown as AdminArgs & { org: string };
          const data = await allPages((page, perPage) => adminCall(target(a), "GET /admin/v1/stacks", { query: { org: a.org, page, per_page: perPage } }));
          print(a, data, () => table(["ID", "NAME", "STATE", "RUNTIME", "MODEL ID", "MODEL CHECK", "RESIDENCY", "MACHINE"], data.map((s) => [s.id, s.name, stateText(s), s.runtime, s.model_id, modelCheck(s), residencyColumn(s), s.machine_id])));
        },
      })
      .demandCommand(1)
      .strict(),
  handler: () => {},
};
