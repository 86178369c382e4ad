import type { Db } from "../store/open-database.js";

/** One answered gateway request, as the recorder counts it. */
export interface UsageSample {
  orgId: string;
  keyId: string;
  model: string;
  promptTokens: number;
  completionTokens: number;
  /** The request ended in an error (after it was admitted). */
  failed: boolean;
}

/** Requests and tokens of one group in one time bucket. */
export interface UsagePoint {
  /** Start of the bucket, ms since the epoch. */
  start: number;
  requests: number;
  errors: number;
  promptTokens: number;
  completionTokens: number;
}

/** A series of buckets for one key or model. */
export interface UsageSeries {
  group: string;
  points: UsagePoint[];
  total: Omit<UsagePoint, "start">;
}

const MINUTE = 60_000;

interface Cell {
  orgId: string;
  keyId: string;
  model: string;
  minute: number;
  requests: number;
  errors: number;
  promptTokens: number;
  completionTokens: number;
}

/** Options of {@link UsageRecorder}. */
export interface UsageRecorderOptions {
  /** How often counts are written to SQLite. @default 5000 */
  flushIntervalMs?: number;
  /** Where a timed write the database refused is reported (the counts are kept for the next try). */
  onWriteError?: (err: unknown) => void;
  now?: () => number;
}

/**
 * Counts the gateway's requests and tokens per organization, key, model and
 * minute in memory (a map update per request) and writes the counts to SQLite
 * in one transaction every few seconds, so recording costs the request path
 * nothing measurable. Reads flush first, so what a page shows is current.
 */
export class UsageRecorder {
  private cells = new Map<string, Cell>();
  private readonly timer: NodeJS.Timeout;
  private readonly now: () => number;
  private readonly upsert;

  constructor(
    private readonly db: Db,
    options: UsageRecorderOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.upsert = db.prepare(
      `INSERT INTO usage_minutes (org_id, key_id, model, minute, requests, errors, prompt_tokens, completion_tokens)
       VALUES (@orgId, @keyId, @model, @minute, @requests, @errors, @promptTokens, @completionTokens)
       ON CONFLICT (org_id, minute, key_id, model) DO UPDATE SET
         requests = requests + excluded.requests, errors = errors + excluded.errors,
         prompt_tokens = prompt_tokens + excluded.prompt_tokens, completion_tokens = completion_tokens + excluded.completion_tokens`,
    );
    this.timer = setInterval(() => {
      try {
        this.flush();
      } catch (err) {
        if (!options.onWriteError) throw err;
        options.onWriteError(err);
      }
    }, options.flushIntervalMs ?? 5000);
    this.timer.unref();
  }

  record(s: UsageSample): void {
    const minute = Math.floor(this.now() / MINUTE) * MINUTE;
    const id = `${s.orgId}\u0000${s.keyId}\u0000${s.model}\u0000${minute}`;
    let cell = this.cells.get(id);
    if (!cell) {
      cell = { orgId: s.orgId, keyId: s.keyId, model: s.model, minute, requests: 0, errors: 0, promptTokens: 0, completionTokens: 0 };
      this.cells.set(id, cell);
    }
    cell.requests++;
    if (s.failed) cell.errors++;
    cell.promptTokens += Math.max(0, s.promptTokens);
    cell.completionTokens += Math.max(0, s.completionTokens);
  }

  /** Writes what was counted since the last flush. A failed write keeps the counts for the next try. */
  flush(): void {
    if (this.cells.size === 0) return;
    const cells = this.cells;
    this.cells = new Map();
    try {
      this.db.transaction(() => {
        for (const c of cells.values()) this.upsert.run(c);
      })();
    } catch (err) {
      for (const [id, c] of cells) if (!this.cells.has(id)) this.cells.set(id, c);
      throw err;
    }
  }

  /**
   * Requests and tokens over the last 24 hours (hourly buckets) or 30 days
   * (daily buckets), per key or per model: a series of buckets for the
   * `top` busiest groups and one more (`group` "other") for the rest, and
   * the totals of every group.
   */
  series(
    orgId: string,
    range: "24h" | "30d",
    by: "key" | "model",
    top = 8,
  ): { bucketMs: number; start: number; series: UsageSeries[]; totals: { group: string; total: UsageSeries["total"] }[] } {
    this.flush();
    const bucketMs = range === "24h" ? 3_600_000 : 86_400_000;
    const buckets = range === "24h" ? 24 : 30;
    const end = Math.floor(this.now() / bucketMs) * bucketMs + bucketMs;
    const start = end - buckets * bucketMs;
    const column = by === "key" ? "key_id" : "model";
    const rows = this.db
      .prepare(
        `SELECT ${column} AS grp, CAST((minute - @start) / @bucketMs AS INTEGER) AS bucket, SUM(requests) AS requests, SUM(errors) AS errors,
                SUM(prompt_tokens) AS promptTokens, SUM(completion_tokens) AS completionTokens
         FROM usage_minutes WHERE org_id = @orgId AND minute >= @start AND minute < @end GROUP BY grp, bucket`,
      )
      .all({ orgId, start, end, bucketMs }) as { grp: string; bucket: number; requests: number; errors: number; promptTokens: number; completionTokens: number }[];
    const byGroup = new Map<string, UsageSeries>();
    for (const r of rows) {
      let s = byGroup.get(r.grp);
      if (!s) {
        s = {
          group: r.grp,
          points: Array.from({ length: buckets }, (_, i) => ({ start: start + i * bucketMs, requests: 0, errors: 0, promptTokens: 0, completionTokens: 0 })),
          total: { requests: 0, errors: 0, promptTokens: 0, completionTokens: 0 },
        };
        byGroup.set(r.grp, s);
      }
      const p = s.points[r.bucket];
      if (!p) continue;
      p.requests += r.requests;
      p.errors += r.errors;
      p.promptTokens += r.promptTokens;
      p.completionTokens += r.completionTokens;
      s.total.requests += r.requests;
      s.total.errors += r.errors;
      s.total.promptTokens += r.promptTokens;
      s.total.completionTokens += r.completionTokens;
    }
    const all = [...byGroup.values()].sort((a, b) => b.total.requests - a.total.requests || a.group.localeCompare(b.group));
    const series = all.slice(0, top);
    const rest = all.slice(top);
    if (rest.length) {
      const other: UsageSeries = {
        group: "other",
        points: rest[0]!.points.map((p, i) => ({
          start: p.start,
          requests: rest.reduce((n, s) => n + s.points[i]!.requests, 0),
          errors: rest.reduce((n, s) => n + s.points[i]!.errors, 0),
          promptTokens: rest.reduce((n, s) => n + s.points[i]!.promptTokens, 0),
          completionTokens: rest.reduce((n, s) => n + s.points[i]!.completionTokens, 0),
        })),
        total: {
          requests: rest.reduce((n, s) => n + s.total.requests, 0),
          errors: rest.reduce((n, s) => n + s.total.errors, 0),
          promptTokens: rest.reduce((n, s) => n + s.total.promptTokens, 0),
          completionTokens: rest.reduce((n, s) => n + s.total.completionTokens, 0),
        },
      };
      series.push(other);
    }
    return { bucketMs, start, series, totals: all.map((s) => ({ group: s.group, total: s.total })) };
  }

  /** Requests and tokens per key since `since` (ms), for the keys list. */
  totalsByKey(orgId: string, since: number): Map<string, { requests: number; tokens: number }> {
    this.flush();
    const rows = this.db
      .prepare("SELECT key_id AS keyId, SUM(requests) AS requests, SUM(prompt_tokens + completion_tokens) AS tokens FROM usage_minutes WHERE org_id = ? AND minute >= ? GROUP BY key_id")
      .all(orgId, Math.floor(since / MINUTE) * MINUTE) as { keyId: string; requests: number; tokens: number }[];
    return new Map(rows.map((r) => [r.keyId, { requests: r.requests, tokens: r.tokens }]));
  }

  /** Writes what is left and stops the timer. */
  close(): void {
    clearInterval(this.timer);
    this.flush();
  }
}
