import type { Db } from "./open-database.js";
import { transaction } from "./transaction.js";
import { newId } from "../ids/index.js";

/** One step of a deployment as stored for the web application and `stack deploy --wait`. */
export interface DeploymentStep {
  seq: number;
  kind: string;
  state: "pending" | "running" | "succeeded" | "failed";
  detail: Record<string, unknown> | null;
  error: string | null;
  startedAt: number | null;
  finishedAt: number | null;
}

/** A deployment: one run of the deploy sequence of a stack. */
export interface Deployment {
  id: string;
  stackId: string;
  state: "running" | "succeeded" | "failed";
  error: string | null;
  startedAt: number;
  finishedAt: number | null;
  steps: DeploymentStep[];
}

/** Deployments and their steps. */
export class DeploymentStore {
  /** Start times this process gave, strictly increasing, so a stack's latest deployment is the one started last. */
  private lastStartedAt = 0;

  constructor(private readonly db: Db) {}

  /** Records a new running deployment with its steps pending. */
  async start(stackId: string, steps: readonly string[], now = Date.now()): Promise<string> {
    const id = newId("dep");
    now = this.lastStartedAt = Math.max(now, this.lastStartedAt + 1);
    await transaction(this.db, async (trx) => {
      await trx.insertInto("deployments").values({ id, stack_id: stackId, state: "running", started_at: now }).execute();
      if (steps.length) await trx.insertInto("deployment_steps").values(steps.map((kind, seq) => ({ deployment_id: id, seq, kind, state: "pending" as const }))).execute();
    });
    return id;
  }

  async stepRunning(id: string, seq: number, now = Date.now()): Promise<void> {
    await this.db.updateTable("deployment_steps").set({ state: "running", started_at: now }).where("deployment_id", "=", id).where("seq", "=", seq).execute();
  }

  async stepDetail(id: string, seq: number, detail: Record<string, unknown>): Promise<void> {
    await this.db.updateTable("deployment_steps").set({ detail_json: JSON.stringify(detail) }).where("deployment_id", "=", id).where("seq", "=", seq).execute();
  }

  async stepFinished(id: string, seq: number, error: string | null, now = Date.now()): Promise<void> {
    await this.db
      .updateTable("deployment_steps")
      .set({ state: error === null ? "succeeded" : "failed", error, finished_at: now })
      .where("deployment_id", "=", id)
      .where("seq", "=", seq)
      .execute();
  }

  async finish(id: string, error: string | null, now = Date.now()): Promise<void> {
    await this.db
      .updateTable("deployments")
      .set({ state: error === null ? "succeeded" : "failed", error, finished_at: now })
      .where("id", "=", id)
      .execute();
  }

  /** The most recent deployment of a stack, with its steps. */
  async latest(stackId: string): Promise<Deployment | undefined> {
    return (await this.latestOf([stackId])).get(stackId);
  }

  /** The most recent deployment of each of these stacks, with its steps, in two queries. */
  async latestOf(stackIds: readonly string[]): Promise<Map<string, Deployment>> {
    const out = new Map<string, Deployment>();
    if (stackIds.length === 0) return out;
    const rows = await this.db
      .selectFrom("deployments as d")
      .selectAll()
      .where("d.stack_id", "in", stackIds)
      .where("d.id", "=", (eb) =>
        eb.selectFrom("deployments as newest").select("newest.id").whereRef("newest.stack_id", "=", "d.stack_id").orderBy("newest.started_at", "desc").orderBy("newest.id", "desc").limit(1),
      )
      .execute();
    const byId = new Map<string, Deployment>();
    for (const d of rows) {
      const deployment: Deployment = { id: d.id, stackId: d.stack_id, state: d.state, error: d.error, startedAt: d.started_at, finishedAt: d.finished_at, steps: [] };
      byId.set(d.id, deployment);
      out.set(d.stack_id, deployment);
    }
    if (byId.size === 0) return out;
    const steps = await this.db.selectFrom("deployment_steps").selectAll().where("deployment_id", "in", [...byId.keys()]).orderBy("deployment_id").orderBy("seq").execute();
    for (const s of steps) {
      byId.get(s.deployment_id)?.steps.push({
        seq: s.seq,
        kind: s.kind,
        state: s.state,
        detail: s.detail_json ? (JSON.parse(s.detail_json) as Record<string, unknown>) : null,
        error: s.error,
        startedAt: s.started_at,
        finishedAt: s.finished_at,
      });
    }
    return out;
  }
}
