import { MakinaError, parseHfRef } from "../../proto/index.js";
import type { Deployer } from "../deploy/index.js";
import type { EventBus } from "../events/index.js";
import { createApiKey, hashPassword, hashSecret, newSecret, publicKey, type NewApiKey, type PublicApiKey } from "../keys/index.js";
import { checkMachineCredentials } from "../link/index.js";
import { slugify, type ApiKeyChanges, type KeyPageAsk, type StackChanges, type AuditEvent, type Deployment, type Machine, type Organization, type RuntimeKind, type Stack, type Store, type User } from "../store/index.js";
import { checkStack, refusalReasons, type Compatibility, type ModelFacts } from "../compatibility/index.js";
import { MAX_MODEL_REF_CHARS, type ModelInspector } from "./model-inspector.js";
import { isLocalModel, type ModelFiles } from "./model-files.js";
import { checkMaxContext, defaultModelId, layerOptions, onDisk, stackPlan, type PlanLayers } from "./stack-facts.js";

/** What it takes to create a stack. Shapes are checked at the edge (the admin contract); existence and rules here. */
export interface StackInput {
  /** The organization's id or slug. */
  org: string;
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
}

/**
 * An edit of a stack: a field left out is kept, null clears (`modelSha256`: none pinned; `modelId`: the model
 * file's name); see {@link ControlPlane.updateStack}.
 */
export type StackEdit = Partial<Omit<StackInput, "org">>;

/** What an edit did: the stack as it was and as it is now, the fields that differed (named as the admin API names them), and whether it is being redeployed. */
export interface StackEdited {
  before: StackView;
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
/** The fields that change at once, in any state. */
const LIVE_FIELDS = { name: "name", hasEndpoint: "endpoint", captureHours: "capture_hours" } as const satisfies Partial<Record<keyof StackChanges, string>>;

/** A stack being built (the Forge): no name yet, and the machine and model may be missing. */
export type PlanInput = PlanLayers & {
  org: string;
  machine?: string | null;
  runtime: RuntimeKind;
  model?: string | null;
  maxContext?: number | null;
  /** Whether the machine is asked about a model named by its path: for admins, who make stacks; a member's panel leaves the file unknown. @default false */
  askMachine?: boolean;
};

/** A stack with its compatibility and latest deployment, as the admin API returns it. */
export type StackView = Stack & {
  compatibility: Compatibility;
  deployment: Deployment | null;
  /** An `http(s)://` model with no SHA-256 pinned: whatever the server sends is served. (`hf:` files are checked against the hub's digest.) */
  modelUnverified: boolean;
};

/** What it takes to join a machine: its token (shown once), the install command, the address agents dial and the CA they pin. */
export interface Joining {
  token: string;
  installCommand: string;
  server: string;
  caSha256: string | null;
}

/** The default rate limits of an organization's keys; a limit left out is kept, null clears it. */
export interface OrgKeyDefaults {
  defaultKeyRpm?: number | null;
  defaultKeyTpm?: number | null;
}

/**
 * The control plane's operations, shared by the admin API and `makina up`. Inputs come typed (the admin API
 * checks their shape against its contract); here are the rules only the relay's state can answer: what
 * exists, what conflicts, what a machine can run, what a layer's kind takes. Errors are MakinaErrors.
 */
export class ControlPlane {
  constructor(
    private readonly store: Store,
    private readonly deployer: Deployer,
    /** How agents reach the link, for install commands: its `host:port`, whether it is TLS, and the CA they pin. */
    private readonly link: () => {
      address: string;
      tls: boolean;
      caSha256: string | null;
      relayUrl: string;
      /** The TLS install listener and the pin of its key; null when the relay's own URL serves the install files. */
      install?: { url: string; pin: string } | null;
      otherAddresses?: () => Promise<readonly string[]>;
    },
    private readonly events: EventBus,
    private readonly inspector: ModelInspector,
    /** Ends a machine's live link, if it has one. */
    private readonly dropLink: (machineId: string) => void,
    /** Asks machines about the model files stacks name by a local path. */
    private readonly files: ModelFiles,
  ) {}

  /** The organization with this id or slug, if any. */
  findOrg(idOrSlug: string): Promise<Organization | undefined> {
    return this.store.orgs.find(idOrSlug);
  }

  async org(idOrSlug: string): Promise<Organization> {
    const org = await this.findOrg(idOrSlug);
    if (!org) throw new MakinaError("not_found", `No organization '${idOrSlug}'.`, { param: "org" });
    return org;
  }

  listOrgs(): Promise<Organization[]> {
    return this.store.orgs.list();
  }

  async createOrg(name: string): Promise<Organization> {
    const org = await this.store.orgs.create(name, slugify(name));
    if (!org) throw new MakinaError("conflict", `An organization with the slug '${slugify(name)}' already exists.`, { param: "name" });
    return org;
  }

  /**
   * Sets the rate limits that the organization's keys setting none of their own get (null: none); keys with
   * their own limits keep them. Takes effect from the next request.
   */
  async setOrgKeyDefaults(orgRef: string, limits: OrgKeyDefaults): Promise<Organization> {
    const org = await this.org(orgRef);
    await this.store.orgs.setDefaultKeyLimits(org.id, { rpm: limits.defaultKeyRpm, tpm: limits.defaultKeyTpm });
    this.events.emit({ type: "key", orgId: org.id, keyId: "*" });
    return this.org(org.id);
  }

  async listMachines(orgRef: string): Promise<Machine[]> {
    return this.store.machines.listByOrg((await this.org(orgRef)).id);
  }

  /** The machine `id`; not found when `orgId` is given and it is another organization's. */
  async machine(orgId: string | null, id: string): Promise<Machine> {
    const m = await this.store.machines.get(id);
    if (!m || (orgId !== null && m.orgId !== orgId)) throw new MakinaError("not_found", `No machine '${id}'.`, { param: "machine" });
    return m;
  }

  async createMachine(orgRef: string, name: string): Promise<{ machine: Machine } & Joining> {
    const org = await this.org(orgRef);
    const token = newSecret("mk_mach_");
    const machine = await this.store.machines.create({ orgId: org.id, name, tokenHash: hashSecret(token) });
    this.events.emit({ type: "machine", orgId: org.id, machineId: machine.id });
    return { machine, ...(await this.joining(machine.id, token)) };
  }

  /**
   * Revokes a machine: its link is dropped at once, its token stops working, and it cannot connect again.
   * Its stacks' requests get 503 `machine_offline`. Final: add the machine again to use it.
   */
  async revokeMachine(orgId: string | null, id: string): Promise<Machine> {
    const machine = await this.machine(orgId, id);
    await this.store.machines.revoke(machine.id, hashSecret(newSecret("mk_mach_")));
    this.dropLink(machine.id);
    this.events.emit({ type: "machine", orgId: machine.orgId, machineId: machine.id });
    return this.machine(orgId, id);
  }

  /** Renames a machine. */
  async renameMachine(orgId: string | null, id: string, name: string): Promise<Machine> {
    const machine = await this.machine(orgId, id);
    await this.store.machines.rename(machine.id, name);
    this.events.emit({ type: "machine", orgId: machine.orgId, machineId: machine.id });
    return this.machine(orgId, id);
  }

  /**
   * Deletes a machine that never joined (pending) or is revoked, once no stack names it. A pending one is revoked
   * first, so its token cannot join it while it goes. 409 `conflict` for a machine that joined and is not
   * revoked, or that stacks still name.
   */
  async deleteMachine(orgId: string | null, id: string): Promise<Machine> {
    const machine = await this.machine(orgId, id);
    if (!machine.revokedAt && machine.state !== "pending") {
      throw new MakinaError("conflict", `The machine '${machine.name}' has joined: revoke it first, then delete it.`, { param: "machine" });
    }
    const stacksOn = async () => (await this.store.stacks.listByMachine(machine.id)).map((s) => s.name);
    const inUse = (names: string[]) => new MakinaError("conflict", `Stacks still name the machine '${machine.name}' (${names.join(", ")}): delete them first.`, { param: "machine" });
    const named = await stacksOn();
    if (named.length > 0) throw inUse(named);
    if (!machine.revokedAt) await this.revokeMachine(orgId, id);
    // The delete itself refuses when a stack was made on the machine meanwhile.
    if (!(await this.store.machines.delete(machine.id))) {
      if (await this.store.machines.get(machine.id)) throw inUse(await stacksOn());
      throw new MakinaError("not_found", `No machine '${id}'.`, { param: "machine" });
    }
    this.events.emit({ type: "machine", orgId: machine.orgId, machineId: machine.id });
    return machine;
  }

  /** Gives a machine a new token (shown once); the old one stops working and the live link is dropped. */
  async rotateMachineToken(orgId: string | null, id: string): Promise<{ machine: Machine } & Joining> {
    const machine = await this.machine(orgId, id);
    if (machine.revokedAt) throw new MakinaError("conflict", `The machine '${id}' is revoked; add it again instead.`, { param: "machine" });
    const token = newSecret("mk_mach_");
    await this.store.machines.setTokenHash(machine.id, hashSecret(token));
    this.dropLink(machine.id);
    this.events.emit({ type: "machine", orgId: machine.orgId, machineId: machine.id });
    return { machine: await this.machine(orgId, id), ...(await this.joining(machine.id, token)) };
  }

  /** Whether the link would take these credentials (the install script asks before installing anything). */
  checkMachineToken(machineId: string, token: string): ReturnType<typeof checkMachineCredentials> {
    return checkMachineCredentials(this.store, machineId, token);
  }

  /** What a machine needs to join: the address agents dial, the CA they pin, and the install command with its token. */
  private async joining(machineId: string, token: string): Promise<Joining> {
    const { address: server, tls, caSha256, relayUrl, install, otherAddresses } = this.link();
    // Read now, not from a cache: a relay started a moment ago is in the command.
    const others = otherAddresses ? await otherAddresses().catch(() => []) : [];
    const trust = caSha256 ? ` --ca-sha256 ${caSha256}` : tls ? " --tls" : "";
    // Every relay on the database, this one first: the agent fails over between them.
    // Another relay's loopback address reaches nothing from a worker machine (unless this one is on loopback too).
    const loopback = (a: string) => /^(127\.|localhost:|\[::1\]:)/.test(a);
    const reachable = others.filter((a) => a !== server && (loopback(server) || !loopback(a)));
    const servers = [server, ...reachable].map((a) => ` --server ${a}`).join("");
    // One line for a bare machine with Node: the relay serves the script and the agent package of its own version,
    // and the script checks with the relay, before it installs anything, that it answers and takes the token.
    // With TLS on the link, all of it comes over TLS from the install listener, whose key the line pins (curl
    // checks it before sending anything: `-k` only lets a certificate of the relay's own CA through). The token
    // goes in the environment of `sh`, which other users cannot read, rather than in its arguments, which `ps` shows.
    const installCommand = install
      ? `curl -fsSLk --pinnedpubkey ${install.pin} ${install.url}/install.sh | MAKINA_MACHINE_TOKEN=${token} sh -s -- --relay-url ${install.url} --pinned-pubkey ${install.pin}${servers} --machine-id ${machineId}${trust}`
      : `curl -fsSL ${relayUrl}/install.sh | MAKINA_MACHINE_TOKEN=${token} sh -s -- --relay-url ${relayUrl}${servers} --machine-id ${machineId}${trust}`;
    return { token, installCommand, server, caSha256 };
  }

  /**
   * The compatibility of a stack that is being built (the Forge's panel): the
   * same rules that stack create and deploy apply. The machine is optional.
   */
  async checkPlan(input: PlanInput): Promise<Compatibility> {
    const org = await this.org(input.org);
    const machine = input.machine ? await this.machine(org.id, input.machine) : undefined;
    const modelRef = input.model ?? "";
    checkModelRefLength(modelRef);
    checkMaxContext(input.runtime, input.maxContext);
    if (!machine) return checkStack(stackPlan(input.runtime, modelRef, this.inspector.known(modelRef), null, input));
    const { model, problem } = await this.modelOn(machine, input.runtime, modelRef, { ask: input.askMachine ?? false, fresh: false });
    return checkStack(stackPlan(input.runtime, modelRef, model, machine.hardware, input, problem));
  }

  /** Creates a stack; refused with the reasons when the compatibility rules fail it. */
  async createStack(input: StackInput): Promise<StackView> {
    const org = await this.org(input.org);
    const machine = await this.machine(org.id, input.machine);
    checkModelRefLength(input.model);
    if (input.model.startsWith("hf:")) parseHfRef(input.model);
    const harnessOptions = layerOptions(input.harness, input.harnessOptions, "harness");
    const orchestratorOptions = layerOptions(input.orchestrator, input.orchestratorOptions, "orchestrator");
    checkMaxContext(input.runtime, input.maxContext);
    await this.refuseIfIncompatible(machine, input.runtime, input.model, input);
    const stack = await this.store.stacks.create({
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
    });
    this.events.emit({ type: "stack", orgId: org.id, stackId: stack.id });
    return this.view(stack);
  }

  /** The stack `id`; not found when `orgId` is given and it is another organization's. */
  async stack(id: string, orgId: string | null = null): Promise<StackView> {
    const s = await this.store.stacks.get(id);
    if (!s || (orgId !== null && s.orgId !== orgId)) throw new MakinaError("not_found", `No stack '${id}'.`, { param: "stack" });
    return this.view(s);
  }

  /** An organization's machines and stacks as stored (without compatibility: what the overview counts). */
  async fleetOf(orgId: string): Promise<{ machines: Machine[]; stacks: Stack[] }> {
    const [machines, stacks] = await Promise.all([this.store.machines.listByOrg(orgId), this.store.stacks.listByOrg(orgId)]);
    return { machines, stacks };
  }

  async listStacks(orgRef: string): Promise<StackView[]> {
    return this.viewsOf(await this.stackRecords(orgRef));
  }

  /** An organization's stacks as stored, oldest first: what a list searches and sorts before it shows a page. */
  async stackRecords(orgRef: string): Promise<Stack[]> {
    return this.store.stacks.listByOrg((await this.org(orgRef)).id);
  }

  /** Stacks of one organization with their compatibility and latest deployment, as the admin API shows them. */
  async viewsOf(stacks: readonly Stack[]): Promise<StackView[]> {
    if (stacks.length === 0) return [];
    const machines = new Map((await this.store.machines.listByOrg(stacks[0]!.orgId)).map((m) => [m.id, m]));
    const deployments = await this.store.deployments.latestOf(stacks.map((s) => s.id));
    return stacks.map((s) => this.viewWith(s, machines.get(s.machineId) ?? null, deployments.get(s.id) ?? null));
  }

  /** Starts deploying; refused with the reasons when the machine (as it reports itself now) cannot run the stack. */
  async deploy(id: string, orgId: string | null = null): Promise<StackView> {
    const stack = await this.stack(id, orgId);
    const machine = await this.store.machines.get(stack.machineId);
    if (machine) await this.refuseIfIncompatible(machine, stack.runtime, stack.modelRef, { ...stack, endpoint: stack.hasEndpoint });
    return this.view(await this.deployer.deploy(id));
  }

  async undeploy(id: string, orgId: string | null = null): Promise<StackView> {
    await this.stack(id, orgId);
    return this.view(await this.deployer.undeploy(id));
  }

  /**
   * Changes a stack. Its name and endpoint change at once in any state. What its machine builds on (machine,
   * runtime, model, model id, layers) is checked by the rules stack create applies, then kept by a draft or
   * failed stack, or redeployed on its machine by a deployed one; a stack deploying or undeploying refuses it
   * until it has settled, and a deployed one cannot move to another machine (`conflict`). A model changed
   * without a model id given takes its file's name when the old id was the old file's.
   */
  async updateStack(id: string, orgId: string | null, edit: StackEdit): Promise<StackEdited> {
    const stack = await this.stack(id, orgId);
    const harness = edit.harness !== undefined ? edit.harness || null : stack.harness;
    const orchestrator = edit.orchestrator !== undefined ? edit.orchestrator || null : stack.orchestrator;
    const modelRef = edit.model ?? stack.modelRef;
    if (edit.model !== undefined) {
      checkModelRefLength(modelRef);
      if (modelRef.startsWith("hf:")) parseHfRef(modelRef);
    }
    const keptId = stack.modelId === defaultModelId(stack.modelRef) ? defaultModelId(modelRef) : stack.modelId;
    // A layer of another kind starts from no options unless some are given; options given are checked for the kind.
    const optionsOf = (kind: string | null, was: string | null, given: Record<string, unknown> | null | undefined, current: Record<string, unknown>, layer: "harness" | "orchestrator") =>
      layerOptions(kind, given !== undefined ? given : kind === was ? current : null, layer);
    const next: Required<StackChanges> = {
      name: edit.name ?? stack.name,
      machineId: edit.machine !== undefined ? (await this.machine(stack.orgId, edit.machine)).id : stack.machineId,
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
    };
    const differs = (field: keyof StackChanges) => canonical(next[field]) !== canonical(stack[field]);
    const changes: StackChanges = {};
    const changed: string[] = [];
    for (const [field, wire] of Object.entries({ ...LIVE_FIELDS, ...BUILT_FIELDS }) as [keyof StackChanges, string][]) {
      if (!differs(field)) continue;
      (changes as Record<string, unknown>)[field] = next[field];
      changed.push(wire);
    }
    const built = Object.keys(changes).some((field) => field in BUILT_FIELDS);
    if (changed.length === 0) return { before: stack, stack, changed, redeployed: false };
    if (built) {
      if (stack.state === "deploying" || stack.state === "undeploying") {
        throw new MakinaError("conflict", `The stack '${stack.name}' is ${stack.state}: wait until it has settled, then change its ${changed.filter((f) => !Object.values(LIVE_FIELDS).includes(f as never)).join(", ")}.`, { param: "stack" });
      }
      if (stack.state === "deployed" && changes.machineId !== undefined) {
        throw new MakinaError("conflict", `The stack '${stack.name}' is deployed on its machine: undeploy it first, then move it to another.`, { param: "machine" });
      }
      checkMaxContext(next.runtime, next.maxContext);
      const machine = await this.machine(stack.orgId, next.machineId);
      await this.refuseIfIncompatible(machine, next.runtime, next.modelRef, { harness: next.harness, orchestrator: next.orchestrator, endpoint: next.hasEndpoint, maxContext: next.maxContext });
    }
    // Redeployed with the changes, in the same write: the machine builds what changed (its runtime keeps serving
    // when only the layers did), and the gateway routes to the stack again once it is deployed.
    const redeployed = built && stack.state === "deployed";
    if (!(await this.store.stacks.update(stack.id, changes, stack.state, { redeploy: redeployed }))) {
      throw new MakinaError("conflict", `The stack '${stack.name}' changed meanwhile; look at it again and retry.`, { param: "stack" });
    }
    // Prompts and answers already kept follow the capture as it is now: gone when it is off, cut when shortened.
    if (changes.captureHours !== undefined) await this.store.requests.limitCaptures(stack.id, changes.captureHours);
    const after = await this.stack(stack.id);
    // Launching tells live pages itself.
    if (redeployed) this.deployer.launch(after);
    else this.events.emit({ type: "stack", orgId: stack.orgId, stackId: stack.id });
    return { before: stack, stack: after, changed, redeployed };
  }

  /**
   * Deletes a draft or failed stack with its deployments (a failed one is undeployed from its machine first).
   * A stack deployed, deploying or undeploying is refused (`conflict`): undeploy it first.
   */
  async deleteStack(id: string, orgId: string | null): Promise<StackView> {
    const stack = await this.stack(id, orgId);
    if (stack.state !== "draft" && stack.state !== "failed") {
      throw new MakinaError("conflict", `The stack '${stack.name}' is ${stack.state}: undeploy it first, then delete it.`, { param: "stack" });
    }
    if (stack.state === "failed") await this.deployer.undeploy(stack.id);
    if (!(await this.store.stacks.delete(stack.id))) {
      const now = await this.store.stacks.get(stack.id);
      if (!now) throw new MakinaError("not_found", `No stack '${id}'.`, { param: "stack" });
      throw new MakinaError("conflict", `The stack '${stack.name}' became ${now.state} meanwhile: undeploy it first, then delete it.`, { param: "stack" });
    }
    this.events.emit({ type: "stack", orgId: stack.orgId, stackId: stack.id });
    return stack;
  }

  /**
   * Throws 400 `incompatible_stack` with the reasons when the rules fail a stack on this machine. A machine
   * that has reported its hardware gets the model's facts read if need be (a GGUF header over the network).
   */
  private async refuseIfIncompatible(machine: Machine, runtime: RuntimeKind, modelRef: string, layers: PlanLayers): Promise<void> {
    // About to make or deploy it: the machine is asked afresh (a file put there since is found).
    const { model, problem } = await this.modelOn(machine, runtime, modelRef, { ask: true, fresh: true });
    const verdict = checkStack(stackPlan(runtime, modelRef, model, machine.hardware, layers, problem));
    if (verdict.ok === false) throw new MakinaError("incompatible_stack", `This stack cannot run on ${machine.name}: ${refusalReasons(verdict)}`, { param: "runtime" });
  }

  /**
   * What is known of a model for a machine: its facts (a header read over the network, the machine's file, what
   * it pulled), and, for a local path on a machine that is online, whether the machine has it (the reason when it
   * cannot use it). A machine that cannot be asked leaves the file unknown, never refused.
   */
  private async modelOn(machine: Machine, runtime: RuntimeKind, modelRef: string, how: { ask: boolean; fresh: boolean }): Promise<{ model: ModelFacts; problem: string | null }> {
    if (!modelRef) return { model: this.inspector.known(modelRef), problem: null };
    const known = onDisk(machine.hardware ? await this.inspector.facts(modelRef, machine.orgId) : this.inspector.known(modelRef), modelRef, machine);
    if (!how.ask || machine.state !== "online" || machine.revokedAt !== null || !isLocalModel(runtime, modelRef)) return { model: known, problem: null };
    const verdict = await this.files.check(machine.id, runtime, modelRef, { fresh: how.fresh });
    if (!verdict) return { model: known, problem: null };
    if (!verdict.usable) return { model: known, problem: verdict.reason };
    const facts = verdict.facts;
    return { model: facts.kvBytesPerToken !== null || known.weightsBytes === null ? { ...facts, weightsBytes: facts.weightsBytes ?? known.weightsBytes } : known, problem: null };
  }

  async listKeys(orgRef: string): Promise<PublicApiKey[]> {
    return (await this.store.keys.listByOrg((await this.org(orgRef)).id)).map(publicKey);
  }

  /** One page of an organization's keys, searched, filtered and sorted by the database, each with its use since `ask.usageSince`. */
  async keyPage(orgId: string, ask: KeyPageAsk): Promise<{ keys: (PublicApiKey & { requests: number; tokens: number })[]; total: number }> {
    const { keys, total } = await this.store.keys.page(orgId, ask);
    return { keys: keys.map((k) => ({ ...publicKey(k), requests: k.requests, tokens: k.tokens })), total };
  }

  /** The names of keys by id (an unnamed key's prefix and `…`); a key that is gone is not named. */
  keyNames(ids: readonly string[]): Promise<Map<string, string>> {
    return this.store.keys.namesOf(ids);
  }

  /** The key `id` (never its secret or hash). */
  async key(id: string): Promise<PublicApiKey> {
    const key = await this.store.keys.get(id);
    if (!key) throw new MakinaError("not_found", `No API key '${id}'.`, { param: "key" });
    return publicKey(key);
  }

  /** Makes a key of the organization; its stacks and machines must be the organization's. The secret is returned this once. */
  async createKey(orgRef: string, options: Omit<NewApiKey, "orgId">): Promise<{ key: string; record: PublicApiKey }> {
    const org = await this.org(orgRef);
    await this.checkKeyTargets(org.id, options);
    const created = await createApiKey(this.store, { ...options, orgId: org.id });
    this.events.emit({ type: "key", orgId: org.id, keyId: created.record.id });
    return created;
  }

  /**
   * Changes a key's name, restrictions, limits or expiry (what `changes` names); its stacks and machines must be
   * its organization's. Holds on every relay from the next request. A revoked key cannot change (`conflict`).
   */
  async updateKey(id: string, changes: ApiKeyChanges): Promise<PublicApiKey> {
    const key = await this.store.keys.get(id);
    if (!key) throw new MakinaError("not_found", `No API key '${id}'.`, { param: "key" });
    if (key.state !== "active") throw new MakinaError("conflict", "This key is revoked: it cannot change. Make a new one.");
    await this.checkKeyTargets(key.orgId, changes);
    const updated = await this.store.keys.update(id, changes);
    if (!updated) throw new MakinaError("not_found", `No API key '${id}'.`, { param: "key" });
    this.events.emit({ type: "key", orgId: updated.orgId, keyId: updated.id });
    return publicKey(updated);
  }

  /** The stacks and machines a key is restricted to must be its organization's. */
  private async checkKeyTargets(orgId: string, target: { stackIds?: string[] | null; machineIds?: string[] | null }): Promise<void> {
    for (const s of target.stackIds ?? []) {
      const stack = await this.store.stacks.get(s);
      if (!stack || stack.orgId !== orgId) throw new MakinaError("not_found", `No stack '${s}' in this organization.`, { param: "stacks" });
    }
    for (const m of target.machineIds ?? []) await this.machine(orgId, m);
  }

  async revokeKey(id: string): Promise<PublicApiKey> {
    const key = await this.store.keys.revoke(id);
    if (!key) throw new MakinaError("not_found", `No API key '${id}'.`, { param: "key" });
    this.events.emit({ type: "key", orgId: key.orgId, keyId: key.id });
    return publicKey(key);
  }

  async listUsers(orgRef: string): Promise<User[]> {
    return this.store.users.listByOrg((await this.org(orgRef)).id);
  }

  /** Adds a person to an organization; the login must be free. */
  async createUser(orgRef: string, input: { login: string; password: string; role: User["role"] }): Promise<User> {
    const org = await this.org(orgRef);
    const taken = () => new MakinaError("conflict", `The login '${input.login}' is taken.`, { param: "login" });
    if (await this.store.users.findByLogin(input.login)) throw taken();
    // Checked again by the insert itself: of two requests for one login at once (on any relay), one gets it.
    const user = await this.store.users.create({ orgId: org.id, login: input.login, passwordHash: await hashPassword(input.password), role: input.role });
    if (!user) throw taken();
    return user;
  }

  /** An organization's audit log, newest first (see {@link AuditEventStore.list}). */
  auditEvents(orgId: string, options: { limit: number; before?: string; actions?: readonly string[] }): Promise<AuditEvent[]> {
    return this.store.audit.list(orgId, options);
  }

  /** The user with this id. */
  async user(id: string): Promise<User> {
    const user = await this.store.users.get(id);
    if (!user) throw new MakinaError("not_found", `No user '${id}'.`, { param: "id" });
    return user;
  }

  /**
   * Disables or enables a user, or changes its role. `by` is the acting user (null for the operator): nobody
   * does this to itself, and an organization keeps at least one enabled admin (checked with the write, so two
   * admins demoting each other at once cannot both succeed).
   */
  async updateUser(user: User, change: { disabled?: boolean; role?: User["role"] }, by: string | null): Promise<User> {
    this.notOneself(user, by, change.disabled === true ? "disable" : "change the role of");
    const updated = await this.store.users.update(user.id, change, { keepAnAdmin: true });
    if (updated === "last_admin") throw lastAdmin(user);
    if (!updated) throw new MakinaError("not_found", `No user '${user.id}'.`, { param: "id" });
    return updated;
  }

  /**
   * Deletes a user and revokes the keys it made; the rules of {@link updateUser}. The user is disabled first, so
   * no session of it can make a key while its keys are revoked, and the keys are looked for again once it is
   * gone (one made by a request already under way). Returns how many keys were revoked.
   */
  async deleteUser(user: User, by: string | null): Promise<number> {
    const id = user.id;
    this.notOneself(user, by, "delete");
    const disabled = await this.store.users.update(id, { disabled: true }, { keepAnAdmin: true });
    if (disabled === "last_admin") throw lastAdmin(user);
    if (!disabled) throw new MakinaError("not_found", `No user '${id}'.`, { param: "id" });
    const revokeKeys = async () => {
      const keys = (await this.store.keys.listByOrg(user.orgId)).filter((k) => k.createdBy === id && k.state === "active");
      for (const key of keys) await this.store.keys.revoke(key.id);
      return keys.length;
    };
    let keysRevoked = await revokeKeys();
    if ((await this.store.users.delete(id)) !== true) throw new MakinaError("not_found", `No user '${id}'.`, { param: "id" });
    keysRevoked += await revokeKeys();
    if (keysRevoked > 0) this.events.emit({ type: "key", orgId: user.orgId, keyId: "*" });
    return keysRevoked;
  }

  /** Gives a user a new password (its sessions are ended by the caller); not one's own (the Account page asks for the current one). */
  async resetPassword(user: User, password: string, by: string | null): Promise<void> {
    if (by === user.id) throw new MakinaError("permission_denied", "Change your own password on the Account page (it asks for the current one).");
    await this.store.users.setPasswordHash(user.id, await hashPassword(password));
  }

  private notOneself(user: User, by: string | null, verb: string): void {
    if (by === user.id) throw new MakinaError("permission_denied", `You cannot ${verb} your own account; ask another admin.`);
  }

  private async view(stack: Stack): Promise<StackView> {
    const [machine, deployment] = await Promise.all([this.store.machines.get(stack.machineId), this.store.deployments.latest(stack.id)]);
    return this.viewWith(stack, machine ?? null, deployment ?? null);
  }

  private viewWith(stack: Stack, machine: Machine | null, deployment: Deployment | null): StackView {
    let model = onDisk(this.inspector.known(stack.modelRef), stack.modelRef, machine);
    // Once pulled, the model's size on the machine is known even when nothing else is.
    const pulled = deployment?.steps.find((s) => s.kind === "pull_model" && s.state === "succeeded")?.detail?.sizeBytes;
    if (model.weightsBytes === null && typeof pulled === "number" && pulled > 0) model = { ...model, weightsBytes: pulled, source: "pulled" };
    // Once served, the runtime said whether the model is an embedding model (its header, read on the machine).
    if (deployment?.steps.some((s) => s.kind === "configure_endpoint" && s.state === "succeeded" && s.detail?.embeddingModel === true)) model = { ...model, embeddingModel: true };
    const compatibility = checkStack(stackPlan(stack.runtime, stack.modelRef, model, machine?.hardware ?? null, { ...stack, endpoint: stack.hasEndpoint }));
    return { ...stack, compatibility, deployment, modelUnverified: /^https?:\/\//i.test(stack.modelRef) && !stack.modelSha256 };
  }
}

/** A value as JSON with its objects' keys in order: the same options given in another order are the same. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (v !== null && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v));
}

/** A model reference (URL, `hf:` reference or path) is at most {@link MAX_MODEL_REF_CHARS} characters. */
function checkModelRefLength(ref: string): void {
  if (ref.length > MAX_MODEL_REF_CHARS) throw new MakinaError("invalid_value", `'model' must be at most ${MAX_MODEL_REF_CHARS} characters.`, { param: "model" });
}

/** Refusal of a change that would leave an organization without an enabled admin. */
function lastAdmin(user: User): MakinaError {
  return new MakinaError("conflict", `'${user.login}' is the organization's only enabled admin: make another user an admin first.`, { param: "id" });
}
