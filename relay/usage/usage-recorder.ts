import { sql } from "kysely";
import { transaction, type Db } from "../store/index.js";

/** One answered gateway request, as the recorder counts it. */
export interface UsageSample {
  orgId: string;
  keyId: string;
  model: string;
  promptTokens: number;
  completionTokens: number;
  /** The request failed or was refused (its tokens, if any, still count). */
  failed: boolean;
  /** The service tier it was served at (`priority`, `default`, `flex`); absent or empty: none (refused before it had one). */
  tier?: string;
}

/** Requests and tokens of one group in one time bucket. */
export interface UsagePoint {
  /** Start of the bucket, ms since the epoch. */
  start: number;
  requests: number;
  errors: number;
  promptTokens: number;
  completionTokens: number;
  /** Of the requests, those served at the `priority` and the `flex` tier. */
  priorityRequests: number;
  flexRequests: number;
}

/** A series of buckets for one key or model. */
export interface UsageSeries {
  group: string;
  points: UsagePoint[];
  total: Omit<UsagePoint, "start">;
}

const MINUTE = 60_000;

type Counts = UsageSeries["total"];

/** The counts a bucket has, each a sum of its minutes. */
const COUNTS = ["requests", "errors", "promptTokens", "completionTokens", "priorityRequests", "flexRequests"] as const;

/** No requests, no tokens. */
const zero = (): Counts => ({ requests: 0, errors: 0, promptTokens: 0, completionTokens: 0, priorityRequests: 0, flexRequests: 0 });

/** A row of sums as the database answers it (PostgreSQL's sums of bigints may come as text). */
function totalOf(r: Record<(typeof COUNTS)[number], number | string>): Counts {
  const t = zero();
  for (const k of COUNTS) t[k] = Number(r[k]);
  return t;
}

/** The counts added up. */
function sumOf(all: readonly Counts[]): Counts {
  const t = zero();
  for (const c of all) for (const k of COUNTS) t[k] += c[k];
  return t;
}

/** `a` less `b`, count by count. */
function minus(a: Counts, b: Counts): Counts {
  const t = zero();
  for (const k of COUNTS) t[k] = a[k] - b[k];
  return t;
}

interface Cell extends Counts {
  orgId: string;
  keyId: string;
  model: string;
  minute: number;
}

/** Options of {@link UsageRecorder}. */
export interface UsageRecorderOptions {
  /** How often counts are written to the database. @default 5000 */
  flushIntervalMs?: number;
  /** Where a timed write the database refused is reported (the counts are kept for the next try). */
  onWriteError?: (err: unknown) => void;
  now?: () => number;
}

/** Rows of one insert: 10 parameters each, well under SQLite's and PostgreSQL's limits. */
const CELLS_PER_STATEMENT = 500;

/**
 * Counts the gateway's requests and tokens per organization, key, model and
 * minute in memory (a map update per request) and adds the counts to the
 * database in one transaction every few seconds (a statement per 500 rows), so recording costs the request
 * path nothing measurable. Relays sharing a database add to the same rows, so
 * the totals are every relay's. Reads flush first, so what a page shows is current.
 */
export class UsageRecorder {
  private cells = new Map<string, Cell>();
  private readonly timer: NodeJS.Timeout;
  private readonly now: () => number;
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly db: Db,
    options: UsageRecorderOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.timer = setInterval(() => {
      // The counts a refused write held are kept for the next flush; the caller hears of it, and nothing rejects unhandled.
      this.flush().catch((err: unknown) => options.onWriteError?.(err));
    }, options.flushIntervalMs ?? 5000);
    this.timer.unref();
  }

  record(s: UsageSample): void {
    const minute = Math.floor(this.now() / MINUTE) * MINUTE;
    const id = `${s.orgId}\u0000${s.keyId}\u0000${s.model}\u0000${minute}`;
    let cell = this.cells.get(id);
    if (!cell) {
      cell = { orgId: s.orgId, keyId: s.keyId, model: s.model, minute, ...zero() };
      this.cells.set(id, cell);
    }
    cell.requests++;
    if (s.failed) cell.errors++;
    cell.promptTokens += Math.max(0, s.promptTokens);
    cell.completionTokens += Math.max(0, s.completionTokens);
    if (s.tier === "priority") cell.priorityRequests++;
    else if (s.tier === "flex") cell.flexRequests++;
  }

  /** Writes what was counted since the last flush. A failed write keeps the counts for the next try. */
  async flush(): Promise<void> {
    // One write at a time: a read waits for the write in progress, then writes what came since.
    while (this.flushing) await this.flushing.catch(() => undefined);
    if (this.cells.size === 0) return;
    const cells = this.cells;
    this.cells = new Map();
    // In one order on every relay (by the rows' key): two relays adding to the same rows cannot deadlock.
    this.flushing = this.write([...cells.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, c]) => c)).catch((err: unknown) => {
      // Counted again on top of what came meanwhile, so nothing is lost or counted twice.
      for (const [id, c] of cells) {
        const now = this.cells.get(id);
        if (!now) this.cells.set(id, c);
        else for (const k of COUNTS) now[k] += c[k];
      }
      throw err;
    });
    try {
      await this.flushing;
    } finally {
      this.flushing = undefined;
    }
  }

  /** One statement per {@link CELLS_PER_STATEMENT} cells (each cell is one row: no row is named twice in a statement). */
  private async write(cells: Cell[]): Promise<void> {
    await transaction(this.db, async (trx) => {
      for (let i = 0; i < cells.length; i += CELLS_PER_STATEMENT) {
        await trx
          .insertInto("usage_minutes")
          .values(
            cells.slice(i, i + CELLS_PER_STATEMENT).map((c) => ({
              org_id: c.orgId,
              key_id: c.keyId,
              model: c.model,
              minute: c.minute,
              requests: c.requests,
              errors: c.errors,
              prompt_tokens: c.promptTokens,
              completion_tokens: c.completionTokens,
              priority_requests: c.priorityRequests,
              flex_requests: c.flexRequests,
            })),
          )
          .onConflict((oc) =>
            oc.columns(["org_id", "minute", "key_id", "model"]).doUpdateSet((eb) => ({
              requests: eb("usage_minutes.requests", "+", eb.ref("excluded.requests")),
              errors: eb("usage_minutes.errors", "+", eb.ref("excluded.errors")),
              prompt_tokens: eb("usage_minutes.prompt_tokens", "+", eb.ref("excluded.prompt_tokens")),
              completion_tokens: eb("usage_minutes.completion_tokens", "+", eb.ref("excluded.completion_tokens")),
              priority_requests: eb("usage_minutes.priority_requests", "+", eb.ref("excluded.priority_requests")),
              flex_requests: eb("usage_minutes.flex_requests", "+", eb.ref("excluded.flex_requests")),
            })),
          )
          .execute();
      }
    });
  }

  /**
   * Requests and tokens over the last 24 hours (hourly buckets) or 30 days (daily buckets), per key or per model:
   * a series of buckets for the `top` busiest groups and one more (`group` "other") for the rest, and the totals
   * of the `listed` busiest groups, with `other` for the rest and `groups` counting them all. Three reads of one
   * moment (a transaction), whatever the number of groups: each group's totals, the top groups' buckets, and
   * every bucket's sum.
   */
  async series(
    orgId: string,
    range: "24h" | "30d",
    by: "key" | "model",
    { top = 8, listed = 100 }: { top?: number; listed?: number } = {},
  ): Promise<{ bucketMs: number; start: number; series: UsageSeries[]; totals: { group: string; total: UsageSeries["total"] }[]; groups: number }> {
    await this.flush();
    const bucketMs = range === "24h" ? 3_600_000 : 86_400_000;
    const buckets = range === "24h" ? 24 : 30;
    const end = Math.floor(this.now() / bucketMs) * bucketMs + bucketMs;
    const start = end - buckets * bucketMs;
    const column = by === "key" ? "key_id" : "model";
    // Integer division of integers on both databases: the bucket a minute falls in. Its numbers are written
    // into the SQL (they are the relay's own integers), so the grouping and the selection are one expression.
    const bucket = sql<number>`(minute - ${sql.lit(start)}) / ${sql.lit(bucketMs)}`;
    const sums = [
      sql<number>`sum(requests)`.as("requests"),
      sql<number>`sum(errors)`.as("errors"),
      sql<number>`sum(prompt_tokens)`.as("promptTokens"),
      sql<number>`sum(completion_tokens)`.as("completionTokens"),
      sql<number>`sum(priority_requests)`.as("priorityRequests"),
      sql<number>`sum(flex_requests)`.as("flexRequests"),
    ] as const;
    const read = await transaction(
      this.db,
      async (trx) => {
        const inRange = trx.selectFrom("usage_minutes").where("org_id", "=", orgId).where("minute", ">=", start).where("minute", "<", end);
        const groups = await inRange.select((eb) => [eb.ref(column).as("grp"), ...sums]).groupBy(column).execute();
        const all = groups.map((r) => ({ group: r.grp, total: totalOf(r) })).sort((a, b) => b.total.requests - a.total.requests || a.group.localeCompare(b.group));
        const shown = all.slice(0, top).map((g) => g.group);
        const ofShown = shown.length ? await inRange.select((eb) => [eb.ref(column).as("grp"), bucket.as("bucket"), ...sums]).where(column, "in", shown).groupBy([column, bucket]).execute() : [];
        const ofAll = all.length > top ? await inRange.select([bucket.as("bucket"), ...sums]).groupBy(bucket).execute() : [];
        return { all, ofShown, ofAll };
      },
      { isolation: "repeatable read" },
    );
    const emptyPoints = () => Array.from({ length: buckets }, (_, i) => ({ start: start + i * bucketMs, ...zero() }));
    const series: UsageSeries[] = read.all.slice(0, top).map((g) => ({ group: g.group, points: emptyPoints(), total: g.total }));
    const byGroup = new Map(series.map((g) => [g.group, g]));
    for (const r of read.ofShown) {
      const p = byGroup.get(r.grp)?.points[r.bucket];
      if (p) Object.assign(p, totalOf(r));
    }
    if (read.all.length > top) {
      // The rest, bucket by bucket: every group's sum less the busiest groups'.
      const other: UsageSeries = { group: "other", points: emptyPoints(), total: zero() };
      for (const r of read.ofAll) {
        const p = other.points[r.bucket];
        if (p) Object.assign(p, totalOf(r));
      }
      other.points.forEach((o, i) => Object.assign(o, minus(o, sumOf(series.map((g) => g.points[i]!)))));
      other.total = sumOf(other.points);
      series.push(other);
    }
    const totals = read.all.slice(0, listed);
    if (read.all.length > listed) totals.push({ group: "other", total: sumOf(read.all.slice(listed).map((g) => g.total)) });
    return { bucketMs, start, series, totals, groups: read.all.length };
  }

  /**
   * Tokens (prompt plus completion) an organization's keys, or one key (`keyId`), used from `since` on, every
   * relay's: what a token budget's count starts from in a period.
   */
  async tokensSince(orgId: string, keyId: string | null, since: number): Promise<number> {
    await this.flush();
    let q = this.db.selectFrom("usage_minutes").where("org_id", "=", orgId).where("minute", ">=", Math.floor(since / MINUTE) * MINUTE);
    if (keyId !== null) q = q.where("key_id", "=", keyId);
    const row = await q.select(sql<number>`coalesce(sum(prompt_tokens + completion_tokens), 0)`.as("tokens")).executeTakeFirst();
    return Number(row?.tokens ?? 0);
  }

  /** Requests and the errors among them an organization's keys made from `since` on, every relay's (for alerts). */
  async requestsSince(orgId: string, since: number): Promise<{ requests: number; errors: number }> {
    await this.flush();
    const row = await this.db
      .selectFrom("usage_minutes")
      .where("org_id", "=", orgId)
      .where("minute", ">=", Math.floor(since / MINUTE) * MINUTE)
      .select([sql<number>`coalesce(sum(requests), 0)`.as("requests"), sql<number>`coalesce(sum(errors), 0)`.as("errors")])
      .executeTakeFirst();
    return { requests: Number(row?.requests ?? 0), errors: Number(row?.errors ?? 0) };
  }

  /** Writes what is left and stops the timer. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
