import { MakinaError } from "../../proto/index.js";
import type { Deployer } from "../deploy/index.js";
import { createApiKey, hashSecret, newSecret, publicKey, type NewApiKey, type PublicApiKey } from "../keys/index.js";
import { RUNTIME_KINDS, slugify, type Machine, type Organization, type RuntimeKind, type Stack, type Store } from "../store/index.js";
import { checkCompatibility, type Compatibility } from "./compatibility.js";

/** What it takes to create a stack through the control plane. */
export interface StackInput {
  org: string;
  name: string;
  machine: string;
  runtime: string;
  model: string;
  modelId?: string;
  harness?: string | null;
  orchestrator?: string | null;
  endpoint?: boolean;
}

/** A stack with its compatibility and latest deployment, as the admin API returns it. */
export type StackView = Stack & { compatibility: Compatibility; deployment: ReturnType<Store["deployments"]["latest"]> | null };

/**
 * The control plane's operations, shared by the admin API and `makina up`.
 * Every input is checked here; errors are MakinaErrors with clear messages.
 */
export class ControlPlane {
  constructor(
    private readonly store: Store,
    private readonly deployer: Deployer,
    /** Address agents dial, for install commands (`host:port`). */
    private readonly linkAddress: () => string,
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

  createMachine(orgRef: unknown, name: unknown): { machine: Machine; token: string; installCommand: string } {
    const org = this.org(requireString(orgRef, "org"));
    const token = newSecret("mk_mach_");
    const machine = this.store.machines.create({ orgId: org.id, name: requireString(name, "name"), tokenHash: hashSecret(token) });
    const installCommand = `sh scripts/install.sh --server ${this.linkAddress()} --machine-id ${machine.id} --token ${token}`;
    return { machine, token, installCommand };
  }

  machine(orgId: string | null, id: string): Machine {
    const m = this.store.machines.get(id);
    if (!m || (orgId !== null && m.orgId !== orgId)) throw new MakinaError("not_found", `No machine '${id}'.`, { param: "machine" });
    return m;
  }

  createStack(input: StackInput): StackView {
    const org = this.org(requireString(input.org, "org"));
    const machine = this.machine(org.id, requireString(input.machine, "machine"));
    const runtime = requireString(input.runtime, "runtime");
    if (!RUNTIME_KINDS.includes(runtime as RuntimeKind)) {
      throw new MakinaError("invalid_value", `Unknown runtime '${runtime}'; expected one of ${RUNTIME_KINDS.join(", ")}.`, { param: "runtime" });
    }
    const modelRef = requireString(input.model, "model");
    const modelId = input.modelId === undefined || input.modelId === null || input.modelId === "" ? defaultModelId(modelRef) : requireString(input.modelId, "model_id");
    const stack = this.store.stacks.create({
      orgId: org.id,
      name: requireString(input.name, "name"),
      machineId: machine.id,
      runtime: runtime as RuntimeKind,
      modelRef,
      modelId,
      harness: input.harness ?? null,
      orchestrator: input.orchestrator ?? null,
      hasEndpoint: input.endpoint ?? true,
    });
    return this.view(stack);
  }

  stack(id: string): StackView {
    const s = this.store.stacks.get(id);
    if (!s) throw new MakinaError("not_found", `No stack '${id}'.`, { param: "stack" });
    return this.view(s);
  }

  listStacks(orgRef: string): StackView[] {
    return this.store.stacks.listByOrg(this.org(orgRef).id).map((s) => this.view(s));
  }

  deploy(id: string): StackView {
    this.stack(id);
    return this.view(this.deployer.deploy(id));
  }

  async undeploy(id: string): Promise<StackView> {
    this.stack(id);
    return this.view(await this.deployer.undeploy(id));
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
    return createApiKey(this.store, { ...options, orgId: org.id });
  }

  listKeys(orgRef: string): PublicApiKey[] {
    return this.store.keys.listByOrg(this.org(orgRef).id).map(publicKey);
  }

  revokeKey(id: string): PublicApiKey {
    const key = this.store.keys.revoke(id);
    if (!key) throw new MakinaError("not_found", `No API key '${id}'.`, { param: "key" });
    return publicKey(key);
  }

  private view(stack: Stack): StackView {
    const machine = this.store.machines.get(stack.machineId);
    return { ...stack, compatibility: checkCompatibility(stack.runtime, machine?.hardware ?? null), deployment: this.store.deployments.latest(stack.id) ?? null };
  }
}

function requireString(v: unknown, param: string): string {
  if (v === undefined || v === null || v === "") throw new MakinaError("missing_required_parameter", `Missing required parameter: '${param}'.`, { param });
  if (typeof v !== "string") throw new MakinaError("invalid_value", `'${param}' must be a string.`, { param });
  return v;
}

/** The model id a stack serves when none is given: the model file's name without `.gguf`. */
export function defaultModelId(modelRef: string): string {
  const last = modelRef.split(/[\\/]/).pop() ?? modelRef;
  return last.replace(/\.gguf$/i, "").replace(/^hf:/, "") || modelRef;
}
