import { MakinaError, parseHfRef, redactText, type MachineLog } from "../../proto/index.js";
import type { Actor } from "../auth/index.js";
import type { Compatibility } from "../compatibility/index.js";
import type { Machine, RuntimeKind, Stack, StackChanges, StackResidency } from "../store/index.js";
import { given, type ControlContext, type Given } from "./control-context.js";
import { checkMaxContext, checkResidency, defaultModelId, layerOptions } from "./stack-facts.js";
import { checkModelRefLength, StackViews, type PlanInput, type StackView } from "./stack-views.js";

/** What it takes to create a stack. Shapes are checked at the edge (the admin contract); existence and rules here. */
export interface StackInput {
  /** The organization's id or slug (a user's own organization when left out). */
  org?: string | null;
  name: string;
  machine: string;
  runtime: RuntimeKind;
  model: string;
  /** The SHA-256 the model file must have (lowercase hex); the machine refuses any other file. */
  modelSha256?: string | null;
  /** Empty or absent: the model file's name. */
  modelId?: string | null;
  harness?: string | null;
  /** The harness's options (`LAYER_OPTIONS` of its kind). */
  harnessOptions?: Record<string, unknown> | null;
  orchestrator?: string | null;
  /** The orchestrator's options, checked against its kind. */
  orchestratorOptions?: Record<string, unknown> | null;
  /** @default true */
  endpoint?: boolean;
  /** Hours the request log keeps prompts and answers; null: none kept. */
  captureHours?: number | null;
  /** The most tokens of context per request its runtime serves (GGUF and vLLM); null: the machine's default. */
  maxContext?: number | null;
  /** When its model is loaded: `on_demand` (not for the `openai` runtime) by its first request. @default "always" */
  residency?: StackResidency;
  /** An on-demand stack's seconds without a request before its model unloads; 0: only when the memory is needed. @default 600 */
  idleUnloadS?: number;
}

/** An edit of a stack: a field left out is kept, null clears (`modelSha256`: none pinned; `modelId`: the model file's name). */
export type StackEdit = Partial<Omit<StackInput, "org">>;

/** What an edit did: the stack as it is now, the fields that differed (named as the admin API names them), and whether it is being redeployed. */
export interface StackEdited {
  stack: StackView;
  changed: string[];
  redeployed: boolean;
}

/** The fields of a stack its machine builds on (a change needs a deployment), and their names in the admin API. */
const BUILT_FIELDS = {
  machineId: "machine",
  runtime: "runtime",
  modelRef: "model",
  modelSha256: "model_sha256",
  modelId: "model_id",
  harness: "harness",
  harnessOptions: "harness_options",
  orchestrator: "orchestrator",
  orchestratorOptions: "orchestrator_options",
  maxContext: "max_context",
} as const satisfies Partial<Record<keyof StackChanges, string>>;
/**
 * The fields its machine is sent with the stack but builds nothing on: a change needs a deployment, and the
 * machine keeps the runtime it has, loaded or not.
 */
const RESIDENCY_FIELDS = { residency: "residency", idleUnloadS: "idle_unload_s" } as const satisfies Partial<Record<keyof StackChanges, string>>;
/** The fields that change at once, in any state. */
const LIVE_FIELDS = { name: "name", hasEndpoint: "endpoint", captureHours: "capture_hours" } as const satisfies Partial<Record<keyof StackChanges, string>>;

const target = (s: { id: string; name: string }) => ({ kind: "stack", id: s.id, name: s.name });

/** Stacks: built, checked, changed, deployed and undeployed by the organization's admins; seen by all of it. */
export class Stacks {
  private readonly views: StackViews;

  constructor(private readonly c: ControlContext) {
    this.views = new StackViews(c);
  }

  /** The organization's stacks as stored, oldest first (on `machine` only, if given): what a list searches and sorts before it shows a page. */
  async records(actor: Actor, orgRef: string | null | undefined, machine?: string): Promise<Stack[]> {
    const stacks = await this.c.store.stacks.listByOrg(this.c.policy(actor).org(orgRef).id);
    return machine === undefined ? stacks : stacks.filter((s) => s.machineId === machine);
  }

  /** Stacks already listed for a caller ({@link records}: its check was there), with their compatibility and latest deployment. */
  viewsOf(stacks: readonly Stack[]): Promise<StackView[]> {
    return this.views.viewsOf(stacks);
  }

  /** The stack `id`, if the actor sees it. */
  get(actor: Actor, id: string): Promise<StackView> {
    return this.views.find(id, this.c.policy(actor).orgScope);
  }

  /**
   * The compatibility of a stack that is being built (the Forge's panel): the same rules that stack create and
   * deploy apply. The machine is optional; an admin's plan asks the machine about a model named by its path.
   */
  async check(actor: Actor, orgRef: string | null | undefined, plan: PlanInput): Promise<Compatibility> {
    const policy = this.c.policy(actor);
    const org = policy.org(orgRef);
    const machine = plan.machine ? await this.c.machine(org.id, plan.machine) : undefined;
    return this.views.check(plan, machine, policy.isAdmin);
  }

  /** The compatibility of one plan on each of the organization's `machines` (already its own), none asked. */
  checkEach(orgId: string, plan: PlanInput, machines: readonly Machine[]): Promise<Compatibility[]> {
    return this.views.checkEach(plan, orgId, machines);
  }

  /** Creates a stack; refused with the reasons when the compatibility rules fail it. */
  async create(actor: Actor, asked: Given<StackInput>): Promise<StackView> {
    const policy = this.c.policy(actor);
    policy.requireAdmin("create stacks");
    const input = given(asked);
    const org = policy.org(input.org);
    const machine = await this.c.machine(org.id, input.machine);
    checkModelRefLength(input.model);
    if (input.model.startsWith("hf:")) parseHfRef(input.model);
    const harnessOptions = layerOptions(input.harness, input.harnessOptions, "harness");
    const orchestratorOptions = layerOptions(input.orchestrator, input.orchestratorOptions, "orchestrator");
    checkMaxContext(input.runtime, input.maxContext);
    checkResidency(input.runtime, input.residency);
    const cap = this.c.deps.caps.stacksPerOrg;
    if ((await this.c.store.stacks.countByOrg(org.id)) >= cap) {
      throw new MakinaError("conflict", `This organization has ${cap} stacks, the most this relay allows (MAKINA_MAX_STACKS_PER_ORG): delete one first, or ask the relay's operator for more.`);
    }
    await this.views.refuseIfIncompatible(machine, input.runtime, input.model, input);
    const stack = await this.c.store.stacks.create({
      orgId: org.id,
      name: input.name,
      machineId: machine.id,
      runtime: input.runtime,
      modelRef: input.model,
      modelSha256: input.modelSha256 ?? null,
      modelId: input.modelId || defaultModelId(input.model),
      harness: input.harness || null,
      harnessOptions,
      orchestrator: input.orchestrator || null,
      orchestratorOptions,
      hasEndpoint: input.endpoint ?? true,
      captureHours: input.captureHours ?? null,
      maxContext: input.maxContext ?? null,
      residency: input.residency,
      idleUnloadS: input.idleUnloadS,
    });
    this.c.events.emit({ type: "stack", orgId: org.id, stackId: stack.id });
    await this.c.record(actor, { orgId: stack.orgId, action: "stack.created", target: target(stack), detail: { machine: stack.machineId, runtime: stack.runtime, model: redactText(stack.modelRef), ...(stack.captureHours !== null && { capture_hours: stack.captureHours }), ...(stack.residency === "on_demand" && { residency: stack.residency, idle_unload_s: stack.idleUnloadS }) } });
    return this.views.view(stack);
  }

  /** Starts deploying; refused with the reasons when the machine (as it reports itself now) cannot run the stack. */
  async deploy(actor: Actor, id: string): Promise<StackView> {
    const policy = this.c.policy(actor);
    policy.requireAdmin("deploy stacks");
    const stack = await this.views.find(id, policy.orgScope);
    const machine = await this.c.store.machines.get(stack.machineId);
    if (machine) await this.views.refuseIfIncompatible(machine, stack.runtime, stack.modelRef, { ...stack, endpoint: stack.hasEndpoint }, stack.id);
    const deploying = await this.views.view(await this.c.deps.deployer.deploy(id));
    await this.c.record(actor, { orgId: deploying.orgId, action: "stack.deployed", target: target(deploying) });
    return deploying;
  }

  /** Takes the stack off its machine. */
  async undeploy(actor: Actor, id: string): Promise<StackView> {
    const policy = this.c.policy(actor);
    policy.requireAdmin("undeploy stacks");
    await this.views.find(id, policy.orgScope);
    const stack = await this.views.view(await this.c.deps.deployer.undeploy(id));
    await this.c.record(actor, { orgId: stack.orgId, action: "stack.undeployed", target: target(stack) });
    return stack;
  }

  /**
   * Loads (`load`) or unloads a deployed on-demand stack's model on its machine now, wherever the machine is linked:
   * ahead of its first request (a demo, a morning's traffic), or to give its memory back. Answers once it is done
   * (a load within MAKINA_LOAD_TIMEOUT_MS), with the machine's reason when it cannot (503 `insufficient_memory`
   * naming what holds it). An `always` stack, or one not deployed, is refused (`conflict`).
   */
  async setLoaded(actor: Actor, id: string, load: boolean): Promise<StackView> {
    const policy = this.c.policy(actor);
    policy.requireAdmin(load ? "load models" : "unload models");
    const stack = await this.views.find(id, policy.orgScope);
    if (stack.state !== "deployed") throw new MakinaError("conflict", `The stack '${stack.name}' is ${stack.state}: only a deployed stack's model is ${load ? "loaded" : "unloaded"}.`, { param: "stack" });
    if (stack.residency !== "on_demand") throw new MakinaError("conflict", `The stack '${stack.name}' is always loaded while deployed: make it on demand (residency on_demand) to load and unload it by hand.`, { param: "stack" });
    await this.c.deps.loadModel(stack.machineId, stack.id, load);
    // Done on the machine: said now (its own report, batched, says the same a moment later).
    await this.c.store.stacks.setRuntimeState(stack.id, load ? "ready" : "unloaded", null);
    await this.c.record(actor, { orgId: stack.orgId, action: load ? "stack.loaded" : "stack.unloaded", target: target(stack) });
    return this.views.find(stack.id, null);
  }

  /** The last lines of a stack's runtime log on its machine (admins), after line `after`, read over the machine's link. */
  async log(actor: Actor, id: string, after: number, limit: number): Promise<MachineLog> {
    const policy = this.c.policy(actor);
    policy.requireAdmin("read a stack's log");
    const stack = await this.c.stack(policy.orgScope, id);
    return this.c.deps.readLog(stack.machineId, stack.id, after, limit);
  }

  /**
   * Changes a stack. Its name and endpoint change at once in any state. What its machine builds on (machine,
   * runtime, model, model id, layers) is checked by the rules stack create applies, then kept by a draft or
   * failed stack, or redeployed on its machine by a deployed one; so is its residency, whose change alone the
   * machine applies to the runtime it has, without a restart. A stack deploying or undeploying refuses these
   * until it has settled, and a deployed one cannot move to another machine (`conflict`). A model changed
   * without a model id given takes its file's name when the old id was the old file's. What changed is recorded
   * (options as the names of those set, never their texts).
   */
  async update(actor: Actor, id: string, asked: Given<StackEdit>): Promise<StackEdited> {
    const policy = this.c.policy(actor);
    policy.requireAdmin("change stacks");
    const stack = await this.views.find(id, policy.orgScope);
    const edit = given(asked);
    const next = await this.edited(stack, edit);
    const differs = (field: keyof StackChanges) => canonical(next[field]) !== canonical(stack[field]);
    const changes: StackChanges = {};
    const changed: string[] = [];
    for (const [field, wire] of Object.entries({ ...LIVE_FIELDS, ...BUILT_FIELDS, ...RESIDENCY_FIELDS }) as [keyof StackChanges, string][]) {
      if (!differs(field)) continue;
      (changes as Record<string, unknown>)[field] = next[field];
      changed.push(wire);
    }
    if (changed.length === 0) return { stack, changed, redeployed: false };
    const built = Object.keys(changes).some((field) => field in BUILT_FIELDS);
    // What the machine is sent: built on, or its residency.
    const sent = built || Object.keys(changes).some((field) => field in RESIDENCY_FIELDS);
    if (sent) {
      if (stack.state === "deploying" || stack.state === "undeploying") {
        throw new MakinaError("conflict", `The stack '${stack.name}' is ${stack.state}: wait until it has settled, then change its ${changed.filter((f) => !Object.values(LIVE_FIELDS).includes(f as never)).join(", ")}.`, { param: "stack" });
      }
      if (stack.state === "deployed" && changes.machineId !== undefined) {
        throw new MakinaError("conflict", `The stack '${stack.name}' is deployed on its machine: undeploy it first, then move it to another.`, { param: "machine" });
      }
      checkResidency(next.runtime, next.residency);
    }
    // A new residency is judged too: made on demand, a stack must fit the machine's memory budget beside what stays loaded.
    if (built || changes.residency !== undefined) {
      checkMaxContext(next.runtime, next.maxContext);
      const machine = await this.c.machine(stack.orgId, next.machineId);
      await this.views.refuseIfIncompatible(machine, next.runtime, next.modelRef, { harness: next.harness, orchestrator: next.orchestrator, endpoint: next.hasEndpoint, maxContext: next.maxContext, residency: next.residency }, stack.id);
    }
    // Redeployed with the changes, in the same write: the machine builds what changed (its runtime keeps serving
    // when only the layers or the residency did), and the gateway routes to the stack again once it is deployed.
    const redeployed = sent && stack.state === "deployed";
    if (!(await this.c.store.stacks.update(stack.id, changes, stack.state, { redeploy: redeployed }))) {
      throw new MakinaError("conflict", `The stack '${stack.name}' changed meanwhile; look at it again and retry.`, { param: "stack" });
    }
    // Prompts and answers already kept follow the capture as it is now: gone when it is off, cut when shortened.
    if (changes.captureHours !== undefined) await this.c.store.requests.limitCaptures(stack.id, changes.captureHours);
    const after = await this.views.find(stack.id, null);
    // Launching tells live pages itself.
    if (redeployed) this.c.deps.deployer.launch(after);
    else this.c.events.emit({ type: "stack", orgId: stack.orgId, stackId: stack.id });
    await this.c.record(actor, { orgId: after.orgId, action: "stack.changed", target: target(after), detail: { ...changeDetail(stack, after, changed), ...(redeployed && { redeployed: true }) } });
    return { stack: after, changed, redeployed };
  }

  /**
   * Deletes a draft or failed stack with its deployments (a failed one is undeployed from its machine first).
   * A stack deployed, deploying or undeploying is refused (`conflict`): undeploy it first.
   */
  async delete(actor: Actor, id: string): Promise<StackView> {
    const policy = this.c.policy(actor);
    policy.requireAdmin("delete stacks");
    const stack = await this.views.find(id, policy.orgScope);
    if (stack.state !== "draft" && stack.state !== "failed") {
      throw new MakinaError("conflict", `The stack '${stack.name}' is ${stack.state}: undeploy it first, then delete it.`, { param: "stack" });
    }
    if (stack.state === "failed") await this.c.deps.deployer.undeploy(stack.id);
    if (!(await this.c.store.stacks.delete(stack.id))) {
      const now = await this.c.store.stacks.get(stack.id);
      if (!now) throw new MakinaError("not_found", `No stack '${id}'.`, { param: "stack" });
      throw new MakinaError("conflict", `The stack '${stack.name}' became ${now.state} meanwhile: undeploy it first, then delete it.`, { param: "stack" });
    }
    this.c.events.emit({ type: "stack", orgId: stack.orgId, stackId: stack.id });
    await this.c.record(actor, { orgId: stack.orgId, action: "stack.deleted", target: target(stack), detail: { model: stack.modelId } });
    return stack;
  }

  /** The stack as an edit leaves it, every field resolved (options checked for their layer's kind). */
  private async edited(stack: StackView, edit: StackEdit): Promise<Required<StackChanges>> {
    const harness = edit.harness !== undefined ? edit.harness || null : stack.harness;
    const orchestrator = edit.orchestrator !== undefined ? edit.orchestrator || null : stack.orchestrator;
    // A reference given back as the admin API shows it (its credentials redacted) is the one kept.
    const modelRef = edit.model === undefined || edit.model === redactText(stack.modelRef) ? stack.modelRef : edit.model;
    if (modelRef !== stack.modelRef) {
      checkModelRefLength(modelRef);
      if (modelRef.startsWith("hf:")) parseHfRef(modelRef);
    }
    const keptId = stack.modelId === defaultModelId(stack.modelRef) ? defaultModelId(modelRef) : stack.modelId;
    // A layer of another kind starts from no options unless some are given; options given are checked for the kind.
    const optionsOf = (kind: string | null, was: string | null, given: Record<string, unknown> | null | undefined, current: Record<string, unknown>, layer: "harness" | "orchestrator") =>
      layerOptions(kind, given !== undefined ? given : kind === was ? current : null, layer);
    return {
      name: edit.name ?? stack.name,
      machineId: edit.machine !== undefined ? (await this.c.machine(stack.orgId, edit.machine)).id : stack.machineId,
      runtime: edit.runtime ?? stack.runtime,
      modelRef,
      modelSha256: edit.modelSha256 !== undefined ? edit.modelSha256 : stack.modelSha256,
      modelId: edit.modelId === null ? defaultModelId(modelRef) : (edit.modelId ?? keptId),
      harness,
      harnessOptions: optionsOf(harness, stack.harness, edit.harnessOptions, stack.harnessOptions, "harness"),
      orchestrator,
      orchestratorOptions: optionsOf(orchestrator, stack.orchestrator, edit.orchestratorOptions, stack.orchestratorOptions, "orchestrator"),
      hasEndpoint: edit.endpoint ?? stack.hasEndpoint,
      captureHours: edit.captureHours !== undefined ? edit.captureHours : stack.captureHours,
      maxContext: edit.maxContext !== undefined ? edit.maxContext : stack.maxContext,
      residency: edit.residency ?? stack.residency,
      idleUnloadS: edit.idleUnloadS ?? stack.idleUnloadS,
    };
  }

}

/** What each changed field was and is, in the admin API's words (options as the names of those set, never their texts). */
function changeDetail(before: StackView, after: StackView, changed: string[]): Record<string, unknown> {
  const wire = (s: StackView): Record<string, unknown> => ({
    name: s.name,
    machine: s.machineId,
    runtime: s.runtime,
    model: redactText(s.modelRef),
    model_sha256: s.modelSha256,
    model_id: s.modelId,
    harness: s.harness,
    harness_options: s.harnessOptions,
    orchestrator: s.orchestrator,
    orchestrator_options: s.orchestratorOptions,
    max_context: s.maxContext,
    endpoint: s.hasEndpoint,
    capture_hours: s.captureHours,
    residency: s.residency,
    idle_unload_s: s.idleUnloadS,
  });
  const [was, now] = [wire(before), wire(after)];
  const shown = (v: unknown) => (v !== null && typeof v === "object" && !Array.isArray(v) ? Object.keys(v).join(", ") || null : v);
  return Object.fromEntries(changed.flatMap((f) => [[`${f}_was`, shown(was[f])], [f, shown(now[f])]]));
}

/** A value as JSON with its objects' keys in order: the same options given in another order are the same. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (v !== null && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v));
}
