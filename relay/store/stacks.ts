import type { Db } from "./open-database.js";
import type { ChangeNotices } from "./change-notices.js";
import { BatchLoader } from "./batch-loader.js";
import { transaction } from "./transaction.js";
import type { Updateable } from "kysely";
import type { Row, Tables } from "./tables.js";
import { newId } from "../ids/index.js";
import { MakinaError, type LayerOptionValue, type RuntimeKind } from "../../proto/index.js";

export type { RuntimeKind };

/**
 * Stack states: `draft` → `deploying` → `deployed` or `failed`;
 * `deployed` → `undeploying` → `draft`. A `failed` stack may be deployed again or undeployed.
 */
export type StackState = "draft" | "deploying" | "deployed" | "failed" | "undeploying";

/**
 * When a deployed stack's model is loaded on its machine: `always` (from its deployment to its undeployment), or
 * `on_demand` (by its first request, unloaded when idle or when the machine needs the memory).
 */
export type StackResidency = "always" | "on_demand";

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
  /** The most tokens of context per request the stack asks its runtime for; null: the machine's default. */
  maxContext: number | null;
  /** Hours the request log keeps this stack's prompts and answers; null: it keeps none (the default). */
  captureHours: number | null;
  /** When its model is loaded on its machine. */
  residency: StackResidency;
  /** An on-demand stack's seconds without a request before its model unloads; 0: only when the memory is needed. Kept, unused, by an `always` stack. */
  idleUnloadS: number;
  /**
   * The runtime's state as its machine last reported it: `loading`, `ready` or `failed`, and an on-demand stack's
   * `unloaded` and `unloading`; null before any report.
   */
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
  captureHours?: number | null;
  maxContext?: number | null;
  /** @default "always" */
  residency?: StackResidency;
  /** Seconds. @default 600 */
  idleUnloadS?: number;
}

/** What an edit of a stack changes: a field left out is kept. */
export type StackChanges = Partial<
  Pick<NewStack, "name" | "machineId" | "runtime" | "modelRef" | "modelSha256" | "modelId" | "harness" | "harnessOptions" | "orchestrator" | "orchestratorOptions" | "hasEndpoint" | "captureHours" | "maxContext" | "residency" | "idleUnloadS">
>;

const toStack = (r: Row<"stacks">): Stack => ({
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
  maxContext: r.max_context,
  captureHours: r.capture_hours,
  residency: r.residency,
  idleUnloadS: r.idle_unload_s,
  runtimeState: r.runtime_state,
  runtimeError: r.runtime_error,
  deployedAt: r.deployed_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** A layer's options as stored: JSON, or NULL when it has none. */
const options = (o: Record<string, LayerOptionValue> | undefined): string | null => (o && Object.keys(o).length ? JSON.stringify(o) : null);

/**
 * Stacks, with their state machine enforced on every change. A change of state is written only if the stack
 * is still in the state it was read in, so two relays moving one stack at once cannot both succeed.
 * Changes that alter what the gateway routes to are announced ({@link ChangeNotices}).
 */
export class StackStore {
  /** A machine's stacks, read with other machines' in one query (thousands of machines link at once after a relay dies). */
  private readonly byMachine = new BatchLoader<string, Stack[]>(async (machineIds) => {
    const rows = await this.db.selectFrom("stacks").selectAll().where("machine_id", "in", machineIds).orderBy("created_at").orderBy("id").execute();
    const found = new Map<string, Stack[]>();
    for (const row of rows) {
      const list = found.get(row.machine_id);
      if (list) list.push(toStack(row));
      else found.set(row.machine_id, [toStack(row)]);
    }
    return found;
  }, []);

  constructor(
    private readonly db: Db,
    private readonly notices: ChangeNotices,
  ) {}

  async create(input: NewStack, now = Date.now()): Promise<Stack> {
    const id = newId("stk");
    await this.db
      .insertInto("stacks")
      .values({
        id,
        org_id: input.orgId,
        name: input.name,
        machine_id: input.machineId,
        runtime: input.runtime,
        model_ref: input.modelRef,
        model_sha256: input.modelSha256 ?? null,
        model_id: input.modelId,
        harness: input.harness ?? null,
        harness_options_json: options(input.harnessOptions),
        orchestrator: input.orchestrator ?? null,
        orchestrator_options_json: options(input.orchestratorOptions),
        has_endpoint: input.hasEndpoint ? 1 : 0,
        capture_hours: input.captureHours ?? null,
        max_context: input.maxContext ?? null,
        ...(input.residency !== undefined && { residency: input.residency }),
        ...(input.idleUnloadS !== undefined && { idle_unload_s: input.idleUnloadS }),
        created_at: now,
        updated_at: now,
      })
      .execute();
    return (await this.get(id))!;
  }

  async get(id: string): Promise<Stack | undefined> {
    const row = await this.db.selectFrom("stacks").selectAll().where("id", "=", id).executeTakeFirst();
    return row && toStack(row);
  }

  /** How many stacks an organization has. */
  async countByOrg(orgId: string): Promise<number> {
    const row = await this.db.selectFrom("stacks").select((eb) => eb.fn.countAll<number | string>().as("n")).where("org_id", "=", orgId).executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async listByOrg(orgId: string): Promise<Stack[]> {
    return (await this.db.selectFrom("stacks").selectAll().where("org_id", "=", orgId).orderBy("created_at").orderBy("id").execute()).map(toStack);
  }

  /** A machine's stacks, oldest first. */
  async listByMachine(machineId: string): Promise<Stack[]> {
    return [...(await this.byMachine.load(machineId))];
  }

  /**
   * Stacks with an Endpoint layer the gateway routes to, in one organization or in all: those deployed, and those
   * deployed before and being deployed again (an edit restarting the runtime: requests wait for it, never "not found").
   */
  async serving(orgId?: string): Promise<Stack[]> {
    let query = this.db
      .selectFrom("stacks")
      .selectAll()
      .where((eb) => eb.or([eb("state", "=", "deployed"), eb.and([eb("state", "=", "deploying"), eb("deployed_at", "is not", null)])]))
      .where("has_endpoint", "=", 1);
    if (orgId !== undefined) query = query.where("org_id", "=", orgId);
    return (await query.orderBy("deployed_at").orderBy("id").execute()).map(toStack);
  }

  /**
   * Records what the machine reports of the stack's runtime, and with `contextSize` (tokens) the context its runtime
   * loaded with: an on-demand stack deployed unloaded learns it at its first load. That context is written, and
   * announced (the gateway checks `max_tokens` against it), only when it is new; an undeployed stack keeps none (a
   * load's word that comes after its undeploy is not its context).
   */
  async setRuntimeState(id: string, state: string, error: string | null, contextSize?: number): Promise<void> {
    await this.db.updateTable("stacks").set({ runtime_state: state, runtime_error: error }).where("id", "=", id).execute();
    if (contextSize === undefined) return;
    const stack = await this.get(id);
    if (!stack || stack.state === "draft" || stack.contextSize === contextSize) return;
    await this.notices.after({ kind: "stacks", orgId: stack.orgId }, () =>
      this.db.updateTable("stacks").set({ context_size: contextSize }).where("id", "=", id).where("state", "!=", "draft").execute(),
    );
  }

  /**
   * Moves a stack to `to`, rejecting transitions the state machine does not allow (and a stack another
   * writer moved meanwhile). `extra` sets the error text, context size and deploy time that go with the state.
   */
  async transition(id: string, to: StackState, extra: { error?: string | null; contextSize?: number | null } = {}, now = Date.now()): Promise<Stack> {
    const stack = await this.get(id);
    if (!stack) throw new MakinaError("not_found", `No stack ${id}.`);
    if (!TRANSITIONS[stack.state].includes(to)) {
      throw new MakinaError("conflict", `Stack ${id} is ${stack.state} and cannot become ${to}.`);
    }
    const deployedAt = to === "deployed" ? now : to === "draft" ? null : stack.deployedAt;
    const contextSize = extra.contextSize !== undefined ? extra.contextSize : to === "draft" ? null : stack.contextSize;
    const write = () =>
      this.db
        .updateTable("stacks")
        // Undeployed, nothing of it runs on the machine: what its runtime last said goes too.
        .set({ state: to, state_error: extra.error ?? null, context_size: contextSize, deployed_at: deployedAt, updated_at: now, ...(to === "draft" && { runtime_state: null, runtime_error: null }) })
        .where("id", "=", id)
        .where("state", "=", stack.state)
        .executeTakeFirst();
    // Into or out of what the gateway routes to (`deployed`, and `deploying` again): announced (also when the answer was
    // lost after the commit: the directory reads the organization's stacks back).
    const res = to === "deployed" || stack.state === "deployed" || stack.state === "deploying" ? await this.notices.after({ kind: "stacks", orgId: stack.orgId }, write) : await write();
    if (Number(res.numUpdatedRows) !== 1) {
      const current = await this.get(id);
      throw new MakinaError("conflict", `Stack ${id} became ${current?.state ?? "deleted"} meanwhile and cannot become ${to}.`);
    }
    return (await this.get(id))!;
  }

  /**
   * Changes a stack that is still in the state `whileState` it was read in (false when another writer moved
   * it meanwhile). With `redeploy`, a deployed stack becomes `deploying` in the same write, so the gateway never
   * routes its new fields to the runtime built on the old ones, and an undeploy meanwhile wins cleanly. A
   * deployed stack's change is announced: what the gateway routes on may have changed.
   */
  async update(id: string, changes: StackChanges, whileState: StackState, how: { redeploy?: boolean } = {}, now = Date.now()): Promise<boolean> {
    const set: Updateable<Tables["stacks"]> = { updated_at: now };
    if (how.redeploy) {
      if (whileState !== "deployed") throw new MakinaError("conflict", `Stack ${id} is ${whileState}: only a deployed stack is redeployed.`);
      set.state = "deploying";
      set.state_error = null;
    }
    if (changes.name !== undefined) set.name = changes.name;
    if (changes.machineId !== undefined) set.machine_id = changes.machineId;
    if (changes.runtime !== undefined) set.runtime = changes.runtime;
    if (changes.modelRef !== undefined) set.model_ref = changes.modelRef;
    if (changes.modelSha256 !== undefined) set.model_sha256 = changes.modelSha256;
    if (changes.modelId !== undefined) set.model_id = changes.modelId;
    // Deployed again under another model id: not routed until deployed (its old runtime serves the old id's model).
    if (changes.modelId !== undefined && how.redeploy) set.deployed_at = null;
    if (changes.harness !== undefined) set.harness = changes.harness;
    if (changes.harnessOptions !== undefined) set.harness_options_json = options(changes.harnessOptions);
    if (changes.orchestrator !== undefined) set.orchestrator = changes.orchestrator;
    if (changes.orchestratorOptions !== undefined) set.orchestrator_options_json = options(changes.orchestratorOptions);
    if (changes.hasEndpoint !== undefined) set.has_endpoint = changes.hasEndpoint ? 1 : 0;
    if (changes.captureHours !== undefined) set.capture_hours = changes.captureHours;
    if (changes.maxContext !== undefined) set.max_context = changes.maxContext;
    if (changes.residency !== undefined) set.residency = changes.residency;
    if (changes.idleUnloadS !== undefined) set.idle_unload_s = changes.idleUnloadS;
    const stack = await this.get(id);
    if (!stack) return false;
    const write = () => this.db.updateTable("stacks").set(set).where("id", "=", id).where("state", "=", whileState).executeTakeFirst();
    const res = whileState === "deployed" || whileState === "deploying" ? await this.notices.after({ kind: "stacks", orgId: stack.orgId }, write) : await write();
    return Number(res.numUpdatedRows) === 1;
  }

  /** Deletes a `draft` stack with its deployments; false when there is no such stack or it is not a draft. */
  async delete(id: string): Promise<boolean> {
    const notADraft = new Error("not a draft");
    try {
      return await transaction(this.db, async (trx) => {
        // Claims the row first (PostgreSQL locks it until the commit): a deploy asked meanwhile waits, then finds
        // no stack, rather than starting a deployment whose rows this transaction is deleting.
        const claimed = await trx.updateTable("stacks").set({ updated_at: Date.now() }).where("id", "=", id).where("state", "=", "draft").executeTakeFirst();
        if (Number(claimed.numUpdatedRows) !== 1) throw notADraft;
        const deployments = trx.selectFrom("deployments").select("id").where("stack_id", "=", id);
        await trx.deleteFrom("deployment_steps").where("deployment_id", "in", deployments).execute();
        await trx.deleteFrom("deployments").where("stack_id", "=", id).execute();
        const res = await trx.deleteFrom("stacks").where("id", "=", id).where("state", "=", "draft").executeTakeFirst();
        if (Number(res.numDeletedRows) !== 1) throw notADraft;
        return true;
      });
    } catch (err) {
      // Nothing of it was deleted: the transaction rolled back.
      if (err === notADraft) return false;
      throw err;
    }
  }
}
