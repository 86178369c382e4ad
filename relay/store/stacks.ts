import type { Db } from "./open-database.js";
import { newId } from "../ids/index.js";
import { MakinaError, type LayerOptionValue, type RuntimeKind } from "../../proto/index.js";

export type { RuntimeKind };

/**
 * Stack states: `draft` → `deploying` → `deployed` or `failed`;
 * `deployed` → `undeploying` → `draft`. A `failed` stack may be deployed again or undeployed.
 */
export type StackState = "draft" | "deploying" | "deployed" | "failed" | "undeploying";

const TRANSITIONS: Record<StackState, readonly StackState[]> = {
  draft: ["deploying"],
  deploying: ["deployed", "failed", "undeploying"],
  deployed: ["undeploying", "deploying", "failed"],
  failed: ["deploying", "undeploying"],
  undeploying: ["draft"],
};

/** A stack: machine + runtime + model (+ harness, orchestrator, endpoint). */
export interface Stack {
  id: string;
  orgId: string;
  name: string;
  machineId: string;
  runtime: RuntimeKind;
  modelRef: string;
  /** The SHA-256 (hex) the model file must have, or null when none is pinned. */
  modelSha256: string | null;
  /** The id clients pass as `model` (the Endpoint layer's name). */
  modelId: string;
  harness: string | null;
  /** The harness layer's options (its kind's, checked when the stack was created). */
  harnessOptions: Record<string, LayerOptionValue>;
  orchestrator: string | null;
  /** The orchestrator layer's options (its kind's, checked when the stack was created). */
  orchestratorOptions: Record<string, LayerOptionValue>;
  hasEndpoint: boolean;
  state: StackState;
  stateError: string | null;
  /** Context size served by the runtime, in tokens, once deployed. */
  contextSize: number | null;
  /** The runtime's state as its machine last reported it: `loading`, `ready` or `failed`; null before any report. */
  runtimeState: string | null;
  /** Why the runtime is not ready, as the machine reported it. */
  runtimeError: string | null;
  deployedAt: number | null;
  createdAt: number;
  updatedAt: number;
}

/** What it takes to create a stack. */
export interface NewStack {
  orgId: string;
  name: string;
  machineId: string;
  runtime: RuntimeKind;
  modelRef: string;
  modelSha256?: string | null;
  modelId: string;
  harness?: string | null;
  harnessOptions?: Record<string, LayerOptionValue>;
  orchestrator?: string | null;
  orchestratorOptions?: Record<string, LayerOptionValue>;
  hasEndpoint: boolean;
}

interface Row {
  id: string;
  org_id: string;
  name: string;
  machine_id: string;
  runtime: RuntimeKind;
  model_ref: string;
  model_sha256: string | null;
  model_id: string;
  harness: string | null;
  harness_options_json: string | null;
  orchestrator: string | null;
  orchestrator_options_json: string | null;
  has_endpoint: number;
  state: StackState;
  state_error: string | null;
  context_size: number | null;
  runtime_state: string | null;
  runtime_error: string | null;
  deployed_at: number | null;
  created_at: number;
  updated_at: number;
}

const toStack = (r: Row): Stack => ({
  id: r.id,
  orgId: r.org_id,
  name: r.name,
  machineId: r.machine_id,
  runtime: r.runtime,
  modelRef: r.model_ref,
  modelSha256: r.model_sha256,
  modelId: r.model_id,
  harness: r.harness,
  harnessOptions: r.harness_options_json ? (JSON.parse(r.harness_options_json) as Record<string, LayerOptionValue>) : {},
  orchestrator: r.orchestrator,
  orchestratorOptions: r.orchestrator_options_json ? (JSON.parse(r.orchestrator_options_json) as Record<string, LayerOptionValue>) : {},
  hasEndpoint: r.has_endpoint === 1,
  state: r.state,
  stateError: r.state_error,
  contextSize: r.context_size,
  runtimeState: r.runtime_state,
  runtimeError: r.runtime_error,
  deployedAt: r.deployed_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** A layer's options as stored: JSON, or NULL when it has none. */
const options = (o: Record<string, LayerOptionValue> | undefined): string | null => (o && Object.keys(o).length ? JSON.stringify(o) : null);

/** Stacks in SQLite, with their state machine enforced on every change. */
export class StackStore {
  constructor(private readonly db: Db) {}

  create(input: NewStack, now = Date.now()): Stack {
    const id = newId("stk");
    this.db
      .prepare(
        `INSERT INTO stacks (id, org_id, name, machine_id, runtime, model_ref, model_sha256, model_id, harness, harness_options_json, orchestrator, orchestrator_options_json, has_endpoint, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(id, input.orgId, input.name, input.machineId, input.runtime, input.modelRef, input.modelSha256 ?? null, input.modelId, input.harness ?? null, options(input.harnessOptions), input.orchestrator ?? null, options(input.orchestratorOptions), input.hasEndpoint ? 1 : 0, now, now);
    return this.get(id)!;
  }

  get(id: string): Stack | undefined {
    const row = this.db.prepare("SELECT * FROM stacks WHERE id = ?").get(id) as Row | undefined;
    return row && toStack(row);
  }

  listByOrg(orgId: string): Stack[] {
    return (this.db.prepare("SELECT * FROM stacks WHERE org_id = ? ORDER BY created_at, id").all(orgId) as Row[]).map(toStack);
  }

  listByMachine(machineId: string): Stack[] {
    return (this.db.prepare("SELECT * FROM stacks WHERE machine_id = ? ORDER BY created_at, id").all(machineId) as Row[]).map(toStack);
  }

  /** Prepared once: it runs whenever the gateway's directory was refreshed. */
  private servingStatement: ReturnType<Db["prepare"]> | undefined;

  /** Deployed stacks with an Endpoint layer serving `modelId` in an organization: what the gateway may route to. */
  servingModel(orgId: string, modelId: string): Stack[] {
    return (
      (this.servingStatement ??= this.db.prepare("SELECT * FROM stacks WHERE org_id = ? AND model_id = ? AND state = 'deployed' AND has_endpoint = 1")).all(orgId, modelId) as Row[]
    ).map(toStack);
  }

  /** Every deployed stack with an Endpoint layer in an organization. */
  servingInOrg(orgId: string): Stack[] {
    return (
      this.db.prepare("SELECT * FROM stacks WHERE org_id = ? AND state = 'deployed' AND has_endpoint = 1 ORDER BY deployed_at, id").all(orgId) as Row[]
    ).map(toStack);
  }

  /** Records what the machine reports of the stack's runtime. */
  setRuntimeState(id: string, state: string, error: string | null): void {
    this.db.prepare("UPDATE stacks SET runtime_state = ?, runtime_error = ? WHERE id = ?").run(state, error, id);
  }

  /**
   * Moves a stack to `to`, rejecting transitions the state machine does not allow.
   * `extra` sets the error text, context size and deploy time that go with the state.
   */
  transition(id: string, to: StackState, extra: { error?: string | null; contextSize?: number | null } = {}, now = Date.now()): Stack {
    return this.db.transaction(() => {
      const stack = this.get(id);
      if (!stack) throw new MakinaError("not_found", `No stack ${id}.`);
      if (!TRANSITIONS[stack.state].includes(to)) {
        throw new MakinaError("conflict", `Stack ${id} is ${stack.state} and cannot become ${to}.`);
      }
      const deployedAt = to === "deployed" ? now : to === "draft" ? null : stack.deployedAt;
      const contextSize = extra.contextSize !== undefined ? extra.contextSize : to === "draft" ? null : stack.contextSize;
      this.db
        .prepare("UPDATE stacks SET state = ?, state_error = ?, context_size = ?, deployed_at = ?, updated_at = ? WHERE id = ?")
        .run(to, extra.error ?? null, contextSize, deployedAt, now, id);
      return this.get(id)!;
    })();
  }
}
