import { MakinaError } from "../../proto/index.js";
import { checkStack, refusalReasons, type Compatibility, type MachineBudget, type ModelFacts } from "../compatibility/index.js";
import type { Deployment, Machine, RuntimeKind, Stack, StackResidency } from "../store/index.js";
import type { ControlContext } from "./control-context.js";
import { isLocalModel } from "./model-files.js";
import { MAX_MODEL_REF_CHARS } from "./model-inspector.js";
import { checkMaxContext, checkResidency, machineBudget, onDisk, stackPlan, type PlanLayers } from "./stack-facts.js";

/** A stack with its compatibility and latest deployment, as the admin API returns it. */
export type StackView = Stack & {
  compatibility: Compatibility;
  deployment: Deployment | null;
  /** An `http(s)://` model with no SHA-256 pinned: whatever the server sends is served. (`hf:` files are checked against the hub's digest.) */
  modelUnverified: boolean;
  /** The organization's other stacks with an endpoint for the same model id: deployed, they share its requests. */
  replicas: Replica[];
  /** With replicas: the requests sent to it in the last hour, refused ones included (its share beside theirs); null without replicas. */
  requestsLastHour: number | null;
};

/** Another stack serving a stack's model id. */
export interface Replica {
  id: string;
  name: string;
  machineId: string;
  state: Stack["state"];
  /** The requests sent to it in the last hour, refused ones included. */
  requestsLastHour: number;
}

/** An organization's stacks' names by id. */
const namesOf = (stacks: readonly Stack[]): Map<string, string> => new Map(stacks.map((s) => [s.id, s.name]));

/** The window replicas' shares are counted over. */
const SHARE_WINDOW_MS = 3_600_000;

/** Each stack's replicas among `all` (one organization's stacks): the others with an endpoint for its model id. */
function replicasIn(all: readonly Stack[]): (stack: Stack) => Stack[] {
  const byModel = new Map<string, Stack[]>();
  for (const s of all) if (s.hasEndpoint) byModel.set(s.modelId, [...(byModel.get(s.modelId) ?? []), s]);
  return (stack) => (byModel.get(stack.modelId) ?? []).filter((s) => s.id !== stack.id);
}

/** A stack being built (the Forge): no name yet, and the machine and model may be missing. */
export type PlanInput = PlanLayers & {
  machine?: string | null;
  runtime: RuntimeKind;
  model?: string | null;
  maxContext?: number | null;
  /** Refused for a runtime Makina does not start or stop when `on_demand`. */
  residency?: StackResidency;
  /** The stack being edited, if one is: what it counts on its machine is not one of the others'. */
  stackId?: string;
};

/** What a machine said of its file, over what was known of it, when it says more (its KV cache) or nothing else is known. */
function withMachineFacts(said: ModelFacts, known: ModelFacts): ModelFacts {
  return said.kvBytesPerToken !== null || known.weightsBytes === null ? { ...said, weightsBytes: said.weightsBytes ?? known.weightsBytes } : known;
}

/**
 * What is known of stacks and the machines they run on: a stack's view (its compatibility, its latest
 * deployment), the compatibility of a plan, and the refusal of one that cannot run. The rules are the
 * compatibility room's; the facts come from the model's header, the machine's report and the machine itself.
 */
export class StackViews {
  constructor(private readonly c: ControlContext) {}

  /** The stack `id`; not found when `orgId` is given and it is another organization's. */
  async find(id: string, orgId: string | null): Promise<StackView> {
    return this.view(await this.c.stack(orgId, id));
  }

  /** Stacks of one organization with their compatibility and latest deployment. */
  async viewsOf(stacks: readonly Stack[]): Promise<StackView[]> {
    if (stacks.length === 0) return [];
    const orgId = stacks[0]!.orgId;
    const [machines, deployments, all] = await Promise.all([this.c.store.machines.listByOrg(orgId), this.c.store.deployments.latestOf(stacks.map((s) => s.id)), this.c.store.stacks.listByOrg(orgId)]);
    const byId = new Map(machines.map((m) => [m.id, m]));
    const replicasOf = replicasIn(all);
    const replicas = new Map(stacks.map((s) => [s.id, replicasOf(s)]));
    const counts = await this.shares(orgId, stacks, replicas);
    const names = namesOf(all);
    return stacks.map((s) => this.viewWith(s, byId.get(s.machineId) ?? null, deployments.get(s.id) ?? null, replicas.get(s.id)!, counts, names));
  }

  /** The requests of the last hour of each stack that has replicas, and of its replicas: their shares. */
  private shares(orgId: string, stacks: readonly Stack[], replicas: ReadonlyMap<string, Stack[]>): Promise<Map<string, number>> {
    const counted = new Set<string>();
    for (const s of stacks) {
      const others = replicas.get(s.id) ?? [];
      if (others.length === 0) continue;
      counted.add(s.id);
      for (const r of others) counted.add(r.id);
    }
    return this.c.deps.requests.countsByStack(orgId, [...counted], Date.now() - SHARE_WINDOW_MS);
  }

  /**
   * The compatibility of a plan on `machine` (or on no machine yet). `askMachine`: whether the machine is asked
   * about a model named by its path (admins, who make stacks; a member's panel leaves the file unknown).
   */
  async check(plan: PlanInput, machine: Machine | undefined, askMachine: boolean): Promise<Compatibility> {
    const modelRef = plan.model ?? "";
    checkModelRefLength(modelRef);
    checkMaxContext(plan.runtime, plan.maxContext);
    checkResidency(plan.runtime, plan.residency);
    if (!machine) return checkStack(stackPlan(plan.runtime, modelRef, this.c.deps.inspector.known(modelRef), null, plan));
    const [{ model, problem }, onMachine] = await Promise.all([this.modelOn(machine, plan.runtime, modelRef, { ask: askMachine, fresh: false }), this.onMachine(machine)]);
    return checkStack(stackPlan(plan.runtime, modelRef, model, onMachine, plan, problem, plan.stackId));
  }

  /**
   * The compatibility of one plan on each of one organization's `machines`, asking none of them (the hub search's
   * "fits on N of M"): the organization's stacks read once, the model's facts once (remembered by the inspector).
   */
  async checkEach(plan: PlanInput, orgId: string, machines: readonly Machine[]): Promise<Compatibility[]> {
    const modelRef = plan.model ?? "";
    checkModelRefLength(modelRef);
    const names = namesOf(await this.c.store.stacks.listByOrg(orgId));
    return Promise.all(
      machines.map(async (machine) => {
        const { model } = await this.modelOn(machine, plan.runtime, modelRef, { ask: false, fresh: false });
        const budget = machine.inventory?.memory ? machineBudget(machine, names) : null;
        return checkStack(stackPlan(plan.runtime, modelRef, model, { hardware: machine.hardware, budget }, plan, null));
      }),
    );
  }

  /**
   * Throws 400 `incompatible_stack` with the reasons when the rules fail a stack on this machine. A machine
   * that has reported its hardware gets the model's facts read if need be (a GGUF header over the network).
   */
  async refuseIfIncompatible(machine: Machine, runtime: RuntimeKind, modelRef: string, layers: PlanLayers, stackId?: string): Promise<void> {
    // About to make or deploy it: the machine is asked afresh (a file put there since is found).
    const [{ model, problem }, onMachine] = await Promise.all([this.modelOn(machine, runtime, modelRef, { ask: true, fresh: true }), this.onMachine(machine)]);
    const verdict = checkStack(stackPlan(runtime, modelRef, model, onMachine, layers, problem, stackId));
    if (verdict.ok === false) throw new MakinaError("incompatible_stack", `This stack cannot run on ${machine.name}: ${refusalReasons(verdict)}`, { param: "runtime" });
  }

  async view(stack: Stack): Promise<StackView> {
    const [machine, deployment, all] = await Promise.all([this.c.store.machines.get(stack.machineId), this.c.store.deployments.latest(stack.id), this.c.store.stacks.listByOrg(stack.orgId)]);
    const replicas = replicasIn(all)(stack);
    const counts = await this.shares(stack.orgId, [stack], new Map([[stack.id, replicas]]));
    return this.viewWith(stack, machine ?? null, deployment ?? null, replicas, counts, namesOf(all));
  }

  /** A machine's hardware and memory budget, its organization's stacks on it named as it names them. */
  private async onMachine(machine: Machine): Promise<{ hardware: Machine["hardware"]; budget: MachineBudget | null }> {
    const budget = machine.inventory?.memory ? machineBudget(machine, namesOf(await this.c.store.stacks.listByOrg(machine.orgId))) : null;
    return { hardware: machine.hardware, budget };
  }

  /**
   * What is known of a model for a machine: its facts (a header read over the network, the machine's file, what
   * it pulled), and, for a local path on a machine that is online, whether the machine has it (the reason when it
   * cannot use it). A machine that cannot be asked leaves the file unknown, never refused.
   */
  private async modelOn(machine: Machine, runtime: RuntimeKind, modelRef: string, how: { ask: boolean; fresh: boolean }): Promise<{ model: ModelFacts; problem: string | null }> {
    const inspector = this.c.deps.inspector;
    if (!modelRef) return { model: inspector.known(modelRef), problem: null };
    const known = onDisk(machine.hardware ? await inspector.facts(modelRef, machine.orgId) : inspector.known(modelRef), modelRef, machine);
    if (!how.ask || machine.state !== "online" || machine.revokedAt !== null || !isLocalModel(runtime, modelRef)) return { model: known, problem: null };
    const verdict = await this.c.deps.files.check(machine.id, runtime, modelRef, { fresh: how.fresh });
    if (!verdict) return { model: known, problem: null };
    if (!verdict.usable) return { model: known, problem: verdict.reason };
    return { model: withMachineFacts(verdict.facts, known), problem: null };
  }

  /**
   * What is known of a stack's model without asking anyone: for a file named by its path, what its machine said
   * of it last (the Forge's panel and the deploy asked), so the stack's page estimates as the Forge did; else
   * the header read over the network, or the size the machine reported.
   */
  private knownOn(machine: Machine | null, runtime: RuntimeKind, modelRef: string): ModelFacts {
    const known = onDisk(this.c.deps.inspector.known(modelRef), modelRef, machine);
    const said = machine && isLocalModel(runtime, modelRef) ? this.c.deps.files.lastFacts(machine.id, runtime, modelRef) : undefined;
    return said ? withMachineFacts(said, known) : known;
  }

  private viewWith(stack: Stack, machine: Machine | null, deployment: Deployment | null, others: Stack[], counts: ReadonlyMap<string, number>, names: ReadonlyMap<string, string>): StackView {
    const replicas = others.map((s): Replica => ({ id: s.id, name: s.name, machineId: s.machineId, state: s.state, requestsLastHour: counts.get(s.id) ?? 0 }));
    const requestsLastHour = others.length ? (counts.get(stack.id) ?? 0) : null;
    let model = this.knownOn(machine, stack.runtime, stack.modelRef);
    // Once pulled, the model's size on the machine is known even when nothing else is.
    const pulled = deployment?.steps.find((s) => s.kind === "pull_model" && s.state === "succeeded")?.detail?.sizeBytes;
    if (model.weightsBytes === null && typeof pulled === "number" && pulled > 0) model = { ...model, weightsBytes: pulled, source: "pulled" };
    // Once served, the runtime said whether the model is an embedding model or a reranker (its header, read on the machine).
    const served = deployment?.steps.find((s) => s.kind === "configure_endpoint" && s.state === "succeeded")?.detail;
    if (served?.embeddingModel === true) model = { ...model, embeddingModel: true };
    if (served?.rankingModel === true) model = { ...model, rankingModel: true };
    const onMachine = machine && { hardware: machine.hardware, budget: machineBudget(machine, names) };
    const compatibility = checkStack(stackPlan(stack.runtime, stack.modelRef, model, onMachine, { ...stack, endpoint: stack.hasEndpoint }, null, stack.id));
    return { ...stack, compatibility, deployment, modelUnverified: /^https?:\/\//i.test(stack.modelRef) && !stack.modelSha256, replicas, requestsLastHour };
  }
}

/** A model reference (URL, `hf:` reference or path) is at most {@link MAX_MODEL_REF_CHARS} characters. */
export function checkModelRefLength(ref: string): void {
  if (ref.length > MAX_MODEL_REF_CHARS) throw new MakinaError("invalid_value", `'model' must be at most ${MAX_MODEL_REF_CHARS} characters.`, { param: "model" });
}
