import { MakinaError, parseHfRef, validateLayerOptions, type LayerOptionValue } from "../../proto/index.js";
import type { Deployer } from "../deploy/index.js";
import { checkNewPassword } from "../auth/index.js";
import type { EventBus } from "../events/index.js";
import { createApiKey, hashPassword, hashSecret, newSecret, publicKey, type NewApiKey, type PublicApiKey } from "../keys/index.js";
import type { ModelFacts, StackPlan } from "../compatibility/index.js";
import { RUNTIME_KINDS, slugify, type Deployment, type HardwareSummary, type Machine, type Organization, type RuntimeKind, type Stack, type Store, type User } from "../store/index.js";
import { checkStack, refusalReasons, type Compatibility } from "../compatibility/index.js";
import type { ModelInspector } from "./model-inspector.js";

/** What it takes to create a stack through the control plane. */
export interface StackInput {
  org: string;
  name: string;
  machine: string;
  runtime: string;
  model: string;
  /** The SHA-256 the model file must have (hex); the machine refuses any other file. */
  modelSha256?: string | null;
  modelId?: string;
  harness?: string | null;
  /** The harness's options (`LAYER_OPTIONS` of its kind). */
  harnessOptions?: unknown;
  /** The orchestrator's options, checked against its kind. */
  orchestratorOptions?: unknown;
  orchestrator?: string | null;
  endpoint?: boolean;
}

/** A stack with its compatibility and latest deployment, as the admin API returns it. */
export type StackView = Stack & {
  compatibility: Compatibility;
  deployment: ReturnType<Store["deployments"]["latest"]> | null;
  /** An `http(s)://` model with no SHA-256 pinned: whatever the server sends is served. (`hf:` files are checked against the hub's digest.) */
  modelUnverified: boolean;
};

/**
 * The control plane's operations, shared by the admin API and `makina up`.
 * Every input is checked here; errors are MakinaErrors with clear messages.
 */
export class ControlPlane {
  constructor(
    private readonly store: Store,
    private readonly deployer: Deployer,
    /** How agents reach the link, for install commands: its `host:port`, whether it is TLS, and the CA they pin. */
    private readonly link: () => { address: string; tls: boolean; caSha256: string | null; relayUrl: string },
    private readonly events: EventBus,
    private readonly inspector: ModelInspector,
    /** Ends a machine's live link, if it has one. */
    private readonly dropLink: (machineId: string) => void,
  ) {}

  org(idOrSlug: string): Organization {
    const org = this.store.orgs.find(idOrSlug);
    if (!org) throw new MakinaError("not_found", `No organization '${idOrSlug}'.`, { param: "org" });
    return org;
  }

  createOrg(name: unknown): Organization {
    const n = requireString(name, "name");
    const org = this.store.orgs.create(n, slugify(n));
    if (!org) throw new MakinaError("conflict", `An organization with the slug '${slugify(n)}' already exists.`, { param: "name" });
    return org;
  }

  createMachine(orgRef: unknown, name: unknown): { machine: Machine; token: string; installCommand: string; server: string; caSha256: string | null } {
    const org = this.org(requireString(orgRef, "org"));
    const token = newSecret("mk_mach_");
    const machine = this.store.machines.create({ orgId: org.id, name: requireString(name, "name"), tokenHash: hashSecret(token) });
    this.events.emit({ type: "machine", orgId: org.id, machineId: machine.id });
    return { machine, token, ...this.joining(machine.id, token) };
  }

  /**
   * Revokes a machine: its link is dropped at once, its token stops working, and it cannot connect again.
   * Its stacks' requests get 503 `machine_offline`. Final: add the machine again to use it.
   */
  revokeMachine(orgId: string | null, id: string): Machine {
    const machine = this.machine(orgId, id);
    this.store.machines.revoke(machine.id, hashSecret(newSecret("mk_mach_")));
    this.dropLink(machine.id);
    this.events.emit({ type: "machine", orgId: machine.orgId, machineId: machine.id });
    return this.machine(orgId, id);
  }

  /** Gives a machine a new token (shown once); the old one stops working and the live link is dropped. */
  rotateMachineToken(orgId: string | null, id: string): { machine: Machine; token: string; installCommand: string; server: string; caSha256: string | null } {
    const machine = this.machine(orgId, id);
    if (machine.revokedAt) throw new MakinaError("conflict", `The machine '${id}' is revoked; add it again instead.`, { param: "machine" });
    const token = newSecret("mk_mach_");
    this.store.machines.setTokenHash(machine.id, hashSecret(token));
    this.dropLink(machine.id);
    this.events.emit({ type: "machine", orgId: machine.orgId, machineId: machine.id });
    return { machine: this.machine(orgId, id), token, ...this.joining(machine.id, token) };
  }

  /** What a machine needs to join: the address agents dial, the CA they pin, and the install command with its token. */
  private joining(machineId: string, token: string): { installCommand: string; server: string; caSha256: string | null } {
    const { address: server, tls, caSha256, relayUrl } = this.link();
    const trust = caSha256 ? ` --ca-sha256 ${caSha256}` : tls ? " --tls" : "";
    // One line for a bare machine with Node: the relay serves the script and the agent package of its own version,
    // and the script checks with the relay, before it installs anything, that it answers and takes the token.
    const installCommand = `curl -fsSL ${relayUrl}/install.sh | sh -s -- --relay-url ${relayUrl} --server ${server} --machine-id ${machineId} --token ${token}${trust}`;
    return { installCommand, server, caSha256 };
  }

  machine(orgId: string | null, id: string): Machine {
    const m = this.store.machines.get(id);
    if (!m || (orgId !== null && m.orgId !== orgId)) throw new MakinaError("not_found", `No machine '${id}'.`, { param: "machine" });
    return m;
  }

  /**
   * The compatibility of a stack that is being built (the Forge's panel): the
   * same rules that stack create and deploy apply. The machine is optional.
   */
  async checkPlan(input: Partial<StackInput> & { org: string }): Promise<Compatibility> {
    const org = this.org(input.org);
    const machine = input.machine ? this.machine(org.id, requireString(input.machine, "machine")) : undefined;
    const runtime = requireRuntime(input.runtime);
    const modelRef = typeof input.model === "string" ? input.model : "";
    const model = onDisk(machine?.hardware && modelRef ? await this.inspector.facts(modelRef) : this.inspector.known(modelRef), modelRef, machine ?? null);
    return checkStack(this.plan(runtime, modelRef, model, machine?.hardware ?? null, input));
  }

  /** Creates a stack; refused with the reasons when the compatibility rules fail it. */
  async createStack(input: StackInput): Promise<StackView> {
    const org = this.org(requireString(input.org, "org"));
    const machine = this.machine(org.id, requireString(input.machine, "machine"));
    const runtime = requireRuntime(input.runtime);
    const modelRef = requireString(input.model, "model");
    if (modelRef.startsWith("hf:")) parseHfRef(modelRef);
    const modelSha256 = optionalSha256(input.modelSha256);
    const harnessOptions = layerOptions(input.harness, input.harnessOptions, "harness");
    const orchestratorOptions = layerOptions(input.orchestrator, input.orchestratorOptions, "orchestrator");
    const modelId = input.modelId === undefined || input.modelId === null || input.modelId === "" ? defaultModelId(modelRef) : requireString(input.modelId, "model_id");
    const name = requireString(input.name, "name");
    await this.refuseIfIncompatible(machine, runtime, modelRef, input);
    const stack = this.store.stacks.create({
      orgId: org.id,
      name,
      machineId: machine.id,
      runtime,
      modelRef,
      modelSha256,
      modelId,
      harness: input.harness ?? null,
      harnessOptions,
      orchestrator: input.orchestrator ?? null,
      orchestratorOptions,
      hasEndpoint: input.endpoint ?? true,
    });
    this.events.emit({ type: "stack", orgId: org.id, stackId: stack.id });
    return this.view(stack);
  }

  stack(id: string): StackView {
    const s = this.store.stacks.get(id);
    if (!s) throw new MakinaError("not_found", `No stack '${id}'.`, { param: "stack" });
    return this.view(s);
  }

  listStacks(orgRef: string): StackView[] {
    const org = this.org(orgRef);
    const stacks = this.store.stacks.listByOrg(org.id);
    const machines = new Map(this.store.machines.listByOrg(org.id).map((m) => [m.id, m]));
    const deployments = this.store.deployments.latestOf(stacks.map((s) => s.id));
    return stacks.map((s) => this.view(s, machines.get(s.machineId) ?? null, deployments.get(s.id) ?? null));
  }

  /** Starts deploying; refused with the reasons when the machine (as it reports itself now) cannot run the stack. */
  async deploy(id: string): Promise<StackView> {
    const stack = this.store.stacks.get(id);
    if (!stack) throw new MakinaError("not_found", `No stack '${id}'.`, { param: "stack" });
    const machine = this.store.machines.get(stack.machineId);
    if (machine) await this.refuseIfIncompatible(machine, stack.runtime, stack.modelRef, { ...stack, endpoint: stack.hasEndpoint });
    return this.view(this.deployer.deploy(id));
  }

  /**
   * Throws 400 `incompatible_stack` with the reasons when the rules fail a stack on this machine. A machine
   * that has reported its hardware gets the model's facts read if need be (a GGUF header over the network).
   */
  private async refuseIfIncompatible(machine: Machine, runtime: RuntimeKind, modelRef: string, layers: Parameters<ControlPlane["plan"]>[4]): Promise<void> {
    const model = onDisk(machine.hardware ? await this.inspector.facts(modelRef) : this.inspector.known(modelRef), modelRef, machine);
    const verdict = checkStack(this.plan(runtime, modelRef, model, machine.hardware, layers));
    if (verdict.ok === false) throw new MakinaError("incompatible_stack", `This stack cannot run on ${machine.name}: ${refusalReasons(verdict)}`, { param: "runtime" });
  }

  async undeploy(id: string): Promise<StackView> {
    this.stack(id);
    return this.view(await this.deployer.undeploy(id));
  }

  /**
   * Sets the rate limits that the organization's keys setting none of their own get (null: none); keys with
   * their own limits keep them. Takes effect from the next request.
   */
  setOrgKeyDefaults(orgRef: unknown, limits: { rpm?: unknown; tpm?: unknown }): Organization {
    const org = this.org(requireString(orgRef, "org"));
    const value = (name: "rpm" | "tpm", v: unknown, current: number | null): number | null => {
      if (v === undefined) return current;
      if (v === null) return null;
      if (!Number.isInteger(v) || (v as number) < 1) throw new MakinaError("invalid_value", `'default_key_${name}' must be a positive integer, or null for none.`, { param: `default_key_${name}` });
      return v as number;
    };
    this.store.orgs.setDefaultKeyLimits(org.id, { rpm: value("rpm", limits.rpm, org.defaultKeyRpm), tpm: value("tpm", limits.tpm, org.defaultKeyTpm) });
    this.events.emit({ type: "key", orgId: org.id, keyId: "*" });
    return this.org(org.id);
  }

  createKey(orgRef: unknown, options: Omit<NewApiKey, "orgId">): { key: string; record: PublicApiKey } {
    const org = this.org(requireString(orgRef, "org"));
    for (const s of options.stackIds ?? []) {
      const stack = this.store.stacks.get(s);
      if (!stack || stack.orgId !== org.id) throw new MakinaError("not_found", `No stack '${s}' in organization '${org.slug}'.`, { param: "stacks" });
    }
    for (const m of options.machineIds ?? []) this.machine(org.id, m);
    for (const [name, v] of [["rpm", options.rpm], ["tpm", options.tpm]] as const) {
      if (v !== undefined && v !== null && (!Number.isInteger(v) || v < 1)) throw new MakinaError("invalid_value", `'${name}' must be a positive integer.`, { param: name });
    }
    const created = createApiKey(this.store, { ...options, orgId: org.id });
    this.events.emit({ type: "key", orgId: org.id, keyId: created.record.id });
    return created;
  }

  /** Adds a person to an organization; the password must be at least 10 characters. */
  createUser(orgRef: unknown, input: { login: unknown; password: unknown; role: unknown }): User {
    const org = this.org(requireString(orgRef, "org"));
    const login = requireString(input.login, "login").trim();
    if (!/^[A-Za-z0-9._@+-]{1,64}$/.test(login)) {
      throw new MakinaError("invalid_value", "A login is 1 to 64 letters, digits or . _ @ + - (an email address works).", { param: "login" });
    }
    const role = input.role === undefined || input.role === null || input.role === "" ? "member" : input.role;
    if (role !== "admin" && role !== "member") throw new MakinaError("invalid_value", "'role' must be 'admin' or 'member'.", { param: "role" });
    checkNewPassword(input.password, "password");
    if (this.store.users.findByLogin(login)) throw new MakinaError("conflict", `The login '${login}' is taken.`, { param: "login" });
    return this.store.users.create({ orgId: org.id, login, passwordHash: hashPassword(input.password), role });
  }

  listKeys(orgRef: string): PublicApiKey[] {
    return this.store.keys.listByOrg(this.org(orgRef).id).map(publicKey);
  }

  revokeKey(id: string): PublicApiKey {
    const key = this.store.keys.revoke(id);
    if (!key) throw new MakinaError("not_found", `No API key '${id}'.`, { param: "key" });
    this.events.emit({ type: "key", orgId: key.orgId, keyId: key.id });
    return publicKey(key);
  }

  private view(
    stack: Stack,
    machine: Machine | null = this.store.machines.get(stack.machineId) ?? null,
    deployment: Deployment | null = this.store.deployments.latest(stack.id) ?? null,
  ): StackView {
    let model = onDisk(this.inspector.known(stack.modelRef), stack.modelRef, machine);
    // Once pulled, the model's size on the machine is known even when nothing else is.
    const pulled = deployment?.steps.find((s) => s.kind === "pull_model" && s.state === "succeeded")?.detail?.sizeBytes;
    if (model.weightsBytes === null && typeof pulled === "number" && pulled > 0) model = { ...model, weightsBytes: pulled, source: "pulled" };
    const compatibility = checkStack(this.plan(stack.runtime, stack.modelRef, model, machine?.hardware ?? null, { ...stack, endpoint: stack.hasEndpoint }));
    return { ...stack, compatibility, deployment, modelUnverified: /^https?:\/\//i.test(stack.modelRef) && !stack.modelSha256 };
  }

  private plan(
    runtime: RuntimeKind,
    modelRef: string,
    model: ModelFacts,
    hardware: HardwareSummary | null,
    layers: { harness?: string | null; orchestrator?: string | null; endpoint?: boolean },
  ): StackPlan {
    return {
      runtime,
      modelRef,
      model,
      hardware,
      contextSize: AGENT_DEFAULT_CONTEXT,
      sequences: AGENT_DEFAULT_SEQUENCES,
      harness: layers.harness || null,
      orchestrator: layers.orchestrator || null,
      hasEndpoint: layers.endpoint ?? true,
    };
  }
}

/** What the machine says of a model file it has on disk (a local path it reported), when nothing else is known. */
function onDisk(model: ModelFacts, ref: string, machine: Machine | null): ModelFacts {
  if (model.weightsBytes !== null) return model;
  const file = machine?.inventory?.models.find((m) => m.path === ref);
  return file && file.sizeBytes > 0 ? { ...model, weightsBytes: file.sizeBytes, source: "pulled" } : model;
}

/** The agent's defaults (MAKINA_AGENT_MAX_CONTEXT, MAKINA_AGENT_PARALLEL): what memory estimates assume. */
const AGENT_DEFAULT_CONTEXT = 4096;
const AGENT_DEFAULT_SEQUENCES = 2;

function requireRuntime(v: unknown): RuntimeKind {
  const runtime = requireString(v, "runtime");
  if (!RUNTIME_KINDS.includes(runtime as RuntimeKind)) {
    throw new MakinaError("invalid_value", `Unknown runtime '${runtime}'; expected one of ${RUNTIME_KINDS.join(", ")}.`, { param: "runtime" });
  }
  return runtime as RuntimeKind;
}

function requireString(v: unknown, param: string): string {
  if (v === undefined || v === null || v === "") throw new MakinaError("missing_required_parameter", `Missing required parameter: '${param}'.`, { param });
  if (typeof v !== "string") throw new MakinaError("invalid_value", `'${param}' must be a string.`, { param });
  return v;
}

/** A SHA-256 given as 64 hex digits (any case, `:` separators allowed), lowercased; null when absent. */
function optionalSha256(value: unknown): string | null {
  if (value === undefined || value === null || value === "") return null;
  const hex = typeof value === "string" ? value.replaceAll(":", "").toLowerCase() : "";
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new MakinaError("invalid_value", "model_sha256 is a SHA-256 digest: 64 hex digits.", { param: "model_sha256" });
  return hex;
}

/** The model id a stack serves when none is given: the model file's name without `.gguf`. */
export function defaultModelId(modelRef: string): string {
  const last = modelRef.split(/[\\/]/).pop() ?? modelRef;
  return last.replace(/\.gguf$/i, "").replace(/^hf:/, "") || modelRef;
}

/** A layer's options, checked against its kind; options without a layer are refused. */
function layerOptions(kind: string | null | undefined, options: unknown, layer: "harness" | "orchestrator"): Record<string, LayerOptionValue> {
  const param = `${layer}_options`;
  if (kind) return validateLayerOptions(kind, options, param);
  if (options !== undefined && options !== null && typeof options === "object" && Object.keys(options).length) {
    throw new MakinaError("invalid_value", `'${param}' needs a '${layer}'.`, { param });
  }
  return {};
}
