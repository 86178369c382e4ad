import type { Db } from "./open-database.js";
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

/** Deployments and their steps in SQLite. */
export class DeploymentStore {
  constructor(private readonly db: Db) {}

  /** Records a new running deployment with its steps pending. */
  start(stackId: string, steps: readonly string[], now = Date.now()): string {
    const id = newId("dep");
    this.db.transaction(() => {
      this.db.prepare("INSERT INTO deployments (id, stack_id, state, started_at) VALUES (?, ?, 'running', ?)").run(id, stackId, now);
      const insert = this.db.prepare("INSERT INTO deployment_steps (deployment_id, seq, kind, state) VALUES (?, ?, ?, 'pending')");
      steps.forEach((kind, seq) => insert.run(id, seq, kind));
    })();
    return id;
  }

  stepRunning(id: string, seq: number, now = Date.now()): void {
    this.db.prepare("UPDATE deployment_steps SET state = 'running', started_at = ? WHERE deployment_id = ? AND seq = ?").run(now, id, seq);
  }

  stepDetail(id: string, seq: number, detail: Record<string, unknown>): void {
    this.db.prepare("UPDATE deployment_steps SET detail_json = ? WHERE deployment_id = ? AND seq = ?").run(JSON.stringify(detail), id, seq);
  }

  stepFinished(id: string, seq: number, error: string | null, now = Date.now()): void {
    this.db
      .prepare("UPDATE deployment_steps SET state = ?, error = ?, finished_at = ? WHERE deployment_id = ? AND seq = ?")
      .run(error === null ? "succeeded" : "failed", error, now, id, seq);
  }

  finish(id: string, error: string | null, now = Date.now()): void {
    this.db
      .prepare("UPDATE deployments SET state = ?, error = ?, finished_at = ? WHERE id = ?")
      .run(error === null ? "succeeded" : "failed", error, now, id);
  }

  /** The most recent deployment of a stack, with its steps. */
  latest(stackId: string): Deployment | undefined {
    return this.latestOf([stackId]).get(stackId);
  }

  /** The most recent deployment of each of these stacks, with its steps, in two queries. */
  latestOf(stackIds: readonly string[]): Map<string, Deployment> {
    const out = new Map<string, Deployment>();
    if (stackIds.length === 0) return out;
    const marks = stackIds.map(() => "?").join(",");
    const rows = this.db
      .prepare(
        `SELECT d.* FROM deployments d WHERE d.stack_id IN (${marks})
         AND d.rowid = (SELECT rowid FROM deployments WHERE stack_id = d.stack_id ORDER BY started_at DESC, rowid DESC LIMIT 1)`,
      )
      .all(...stackIds) as { id: string; stack_id: string; state: Deployment["state"]; error: string | null; started_at: number; finished_at: number | null }[];
    if (rows.length === 0) return out;
    const byId = new Map<string, Deployment>();
    for (const d of rows) {
      const deployment: Deployment = { id: d.id, stackId: d.stack_id, state: d.state, error: d.error, startedAt: d.started_at, finishedAt: d.finished_at, steps: [] };
      byId.set(d.id, deployment);
      out.set(d.stack_id, deployment);
    }
    const steps = this.db.prepare(`SELECT * FROM deployment_steps WHERE deployment_id IN (${rows.map(() => "?").join(",")}) ORDER BY deployment_id, seq`).all(...rows.map((r) => r.id)) as {
      deployment_id: string;
      seq: number;
      kind: string;
      state: DeploymentStep["state"];
      detail_json: string | null;
      error: string | null;
      started_at: number | null;
      finished_at: number | null;
    }[];
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
