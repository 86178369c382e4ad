import { CompiledQuery, sql } from "kysely";
import { SortableIds } from "../ids/index.js";
import type { Db } from "./open-database.js";
import type { Row } from "./tables.js";
import { transaction } from "./transaction.js";

/** What a stack that captures keeps of one request: what was asked and what was answered. */
export interface CapturedExchange {
  /** The request's messages, as the client sent them (validated). */
  messages: unknown;
  /** The answer's text. */
  answer: string;
  /** The answer's tool calls, if any. */
  toolCalls: { name: string; arguments: string }[];
  /** Something was cut to the capture's size limit. */
  truncated: boolean;
}

/** One gateway request, as the request log keeps it. */
export interface RequestLogEntry {
  id: string;
  orgId: string;
  /** When it ended, ms since the epoch. */
  at: number;
  /** The `x-request-id` the client got. */
  requestId: string;
  keyId: string | null;
  /** The API it called (`chat/completions`, `embeddings`, `responses`, `messages`, `messages/count_tokens`, `rerank`); empty when not known (logged before it was kept). */
  api: string;
  /** The service tier it was served at (`priority`, `default`, `flex`); empty when refused before it had one. */
  serviceTier: string;
  /** The model asked for (or the one a router sent it to); empty when the body could not be read. */
  model: string;
  stackId: string | null;
  machineId: string | null;
  stream: boolean;
  /** The HTTP status; 499 when the client went away before any answer. */
  status: number;
  /** The error's code, also for a stream that failed after its 200. */
  errorCode: string | null;
  promptTokens: number;
  completionTokens: number;
  /** Of the prompt's tokens, those its runtime did not evaluate again. */
  cachedTokens: number;
  latencyMs: number;
  /** Time to the first token (or the whole answer, not streamed); null when none came. */
  firstTokenMs: number | null;
  /** How long it waited for its model to load (an on-demand stack's, on a machine linked to the relay that answered), ms; null: it did not wait. */
  loadMs: number | null;
  /** Prompt and answer, only while the stack's capture keeps them. */
  capture: CapturedExchange | null;
  /** Until when the capture is kept. */
  captureUntil: number | null;
}

/** A request as the log appends it: its capture already JSON (what the log holds until it writes). */
export type NewRequestLogEntry = Omit<RequestLogEntry, "id" | "capture" | "api" | "serviceTier" | "cachedTokens"> & { captureJson: string | null; api?: string; serviceTier?: string; cachedTokens?: number };

/** Which requests a list shows: the HTTP status (`ok`, `error`, a class such as `4xx`, or one status), a stack, a key, a model, words. */
export interface RequestFilter {
  status?: "ok" | "error" | "2xx" | "4xx" | "5xx" | number;
  stackId?: string;
  keyId?: string;
  model?: string;
  /** A request id, or part of a model's name. */
  q?: string;
  /** The API called. */
  api?: string;
  /** The service tier it was served at. */
  serviceTier?: string;
  /** Only those logged before this one (its id): the next batch of an export, however many come meanwhile. */
  beforeId?: string;
}

/** Which requests a figure counts: an organization's, or only those of one stack or one machine. */
export interface FiguresScope {
  stackId?: string;
  machineId?: string;
}

/** One minute of requests (`minute`: ms since the epoch / 60,000). */
export interface MinuteFigures {
  minute: number;
  requests: number;
  errors: number;
  promptTokens: number;
  completionTokens: number;
}

/** Requests since a time: per minute, and latency percentiles and runtime speed over all of them. */
export interface RequestFigures {
  /** Only minutes with requests, oldest first. */
  minutes: MinuteFigures[];
  /** Requests that ended at or after the `recent` time, and the tokens they generated. */
  recentRequests: number;
  recentCompletionTokens: number;
  /** Latency of the requests answered without error, ms; null when there were none. */
  p50Ms: number | null;
  p95Ms: number | null;
  /**
   * Tokens the runtimes generated per second once the first had come (the answered, streamed requests of more than
   * one token): their speed, not the gateway's throughput. Null when no such request.
   */
  decodeTokensPerSecond: number | null;
}

/** Rows of one insert: 21 parameters each, well under SQLite's and PostgreSQL's limits. */
const ROWS_PER_STATEMENT = 500;
/** Requests one pruning statement deletes at most. */
const PRUNE_CHUNK = 2000;
/** The columns an insert writes, in the order of its parameters. */
const COLUMNS = ["id", "org_id", "at", "request_id", "key_id", "model", "stack_id", "machine_id", "stream", "status", "error_code", "prompt_tokens", "completion_tokens", "latency_ms", "first_token_ms", "load_ms", "capture_json", "capture_until", "api", "service_tier", "cached_tokens"] as const satisfies readonly (keyof Row<"request_log">)[];

/**
 * The insert of `rows` rows, its text written once per size: the request log takes thousands of rows a second,
 * and building each through the query builder cost twice what the database does with them.
 */
function insertText(rows: number, dialect: "sqlite" | "postgres"): string {
  let n = 0;
  const tuple = () => `(${COLUMNS.map(() => (dialect === "sqlite" ? "?" : `$${++n}`)).join(", ")})`;
  return `insert into request_log (${COLUMNS.join(", ")}) values ${Array.from({ length: rows }, tuple).join(", ")}`;
}

const toRequest = (r: Row<"request_log">, withCapture: boolean): RequestLogEntry => ({
  id: r.id,
  orgId: r.org_id,
  at: Number(r.at),
  requestId: r.request_id,
  keyId: r.key_id,
  api: r.api,
  serviceTier: r.service_tier,
  model: r.model,
  stackId: r.stack_id,
  machineId: r.machine_id,
  stream: r.stream === 1,
  status: r.status,
  errorCode: r.error_code,
  promptTokens: r.prompt_tokens,
  completionTokens: r.completion_tokens,
  cachedTokens: r.cached_tokens,
  latencyMs: r.latency_ms,
  firstTokenMs: r.first_token_ms,
  loadMs: r.load_ms,
  capture: withCapture && r.capture_json ? (JSON.parse(r.capture_json) as CapturedExchange) : null,
  captureUntil: r.capture_json !== null && r.capture_until !== null ? Number(r.capture_until) : null,
});

/** The request log's table: appended to in batches, read newest first a page at a time, pruned by age and size. */
export class RequestLogStore {
  /** Ids that sort as the requests ended. */
  private readonly ids = new SortableIds("req");

  /** Insert texts by their number of rows. */
  private readonly inserts = new Map<number, string>();

  constructor(
    private readonly db: Db,
    private readonly dialect: "sqlite" | "postgres",
    /** SQLite's statement kept prepared, when the database has one (see `Database.appendRows`). */
    private readonly appendRows?: (text: string, rows: readonly unknown[][]) => boolean,
  ) {}

  /** Appends requests in one transaction. */
  async insert(requests: readonly NewRequestLogEntry[]): Promise<void> {
    if (requests.length === 0) return;
    // In COLUMNS' order.
    const rows = requests.map((r) => [
      this.ids.next(r.at), r.orgId, r.at, r.requestId, r.keyId, r.model, r.stackId, r.machineId, r.stream ? 1 : 0, r.status, r.errorCode,
      r.promptTokens, r.completionTokens, r.latencyMs, r.firstTokenMs, r.loadMs, r.captureJson, r.captureJson === null ? null : r.captureUntil, r.api ?? "", r.serviceTier ?? "", r.cachedTokens ?? 0,
    ]);
    if (this.appendRows?.(this.textFor(1), rows)) return;
    await transaction(this.db, async (trx) => {
      for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
        const chunk = rows.slice(i, i + ROWS_PER_STATEMENT);
        const params = chunk.flat();
        await trx.executeQuery(CompiledQuery.raw(this.textFor(chunk.length), params));
      }
    });
  }

  /** The insert of `rows` rows, written once. */
  private textFor(rows: number): string {
    let text = this.inserts.get(rows);
    if (text === undefined) this.inserts.set(rows, (text = insertText(rows, this.dialect)));
    return text;
  }

  /**
   * An organization's requests matching `filter`, newest first: `limit` of them after the first `offset`, with
   * their key's and stack's names (null once deleted), and how many match in all. Captures are left out.
   */
  async list(
    orgId: string,
    filter: RequestFilter,
    page: { offset: number; limit: number; uncounted?: boolean },
  ): Promise<{ rows: (RequestLogEntry & { keyName: string | null; stackName: string | null })[]; total: number }> {
    let query = this.db.selectFrom("request_log as r").where("r.org_id", "=", orgId);
    if (filter.stackId !== undefined) query = query.where("r.stack_id", "=", filter.stackId);
    if (filter.keyId !== undefined) query = query.where("r.key_id", "=", filter.keyId);
    if (filter.model !== undefined) query = query.where("r.model", "=", filter.model);
    if (filter.beforeId !== undefined) query = query.where("r.id", "<", filter.beforeId);
    if (filter.api !== undefined) query = query.where("r.api", "=", filter.api);
    if (filter.serviceTier !== undefined) query = query.where("r.service_tier", "=", filter.serviceTier);
    const status = filter.status;
    if (status === "ok") query = query.where("r.status", "<", 400).where("r.error_code", "is", null);
    else if (status === "error") query = query.where((eb) => eb.or([eb("r.status", ">=", 400), eb("r.error_code", "is not", null)]));
    else if (typeof status === "string") query = query.where("r.status", ">=", Number(status[0]) * 100).where("r.status", "<", Number(status[0]) * 100 + 100);
    else if (typeof status === "number") query = query.where("r.status", "=", status);
    const q = filter.q?.trim();
    if (q) {
      // Part of a model's name, any case (LIKE's own characters in the words match themselves), or a request id.
      const pattern = `%${q.toLowerCase().replace(/[!%_]/g, (c) => `!${c}`)}%`;
      query = query.where((eb) => eb.or([eb("r.request_id", "=", q), eb(sql`lower(r.model)`, "like", sql<string>`${pattern} escape '!'`)]));
    }
    const [rows, count] = await Promise.all([
      query
        .leftJoin("api_keys as k", "k.id", "r.key_id")
        .leftJoin("stacks as s", "s.id", "r.stack_id")
        .select(["r.id", "r.org_id", "r.at", "r.request_id", "r.key_id", "r.model", "r.stack_id", "r.machine_id", "r.stream", "r.status", "r.error_code", "r.prompt_tokens", "r.completion_tokens", "r.latency_ms", "r.first_token_ms", "r.load_ms", "r.capture_until", "r.api", "r.service_tier", "r.cached_tokens", "k.name as key_name", "s.name as stack_name"])
        .select(sql<string | null>`case when r.capture_json is null then null else '' end`.as("capture_json"))
        .orderBy("r.id", "desc")
        .limit(page.limit)
        .offset(page.offset)
        .execute(),
      // An export's batches need no count (-1 for them).
      page.uncounted ? { n: -1 } : query.select((eb) => eb.fn.countAll<number | string>().as("n")).executeTakeFirstOrThrow(),
    ]);
    return { rows: rows.map((r) => ({ ...toRequest(r, false), keyName: r.key_name, stackName: r.stack_name })), total: Number(count.n) };
  }

  /** One request, its capture with it and its key's and stack's names; undefined when there is none such. */
  async get(id: string): Promise<(RequestLogEntry & { keyName: string | null; stackName: string | null }) | undefined> {
    const row = await this.db
      .selectFrom("request_log as r")
      .leftJoin("api_keys as k", "k.id", "r.key_id")
      .leftJoin("stacks as s", "s.id", "r.stack_id")
      .selectAll("r")
      .select(["k.name as key_name", "s.name as stack_name"])
      .where("r.id", "=", id)
      .executeTakeFirst();
    return row && { ...toRequest(row, true), keyName: row.key_name, stackName: row.stack_name };
  }

  /**
   * How many requests each of `stackIds` (one organization's) sent to its machine that ended at or after `since`:
   * its share of the work. One refused before it reached a machine (a limit, a full queue) is not.
   */
  async countsByStack(orgId: string, stackIds: readonly string[], since: number): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    if (stackIds.length === 0) return counts;
    const rows = await this.db
      .selectFrom("request_log")
      .select(["stack_id", (eb) => eb.fn.countAll<number | string>().as("n")])
      .where("org_id", "=", orgId)
      .where("id", ">=", this.ids.floor(since))
      .where("stack_id", "in", [...stackIds])
      .where("machine_id", "is not", null)
      .groupBy("stack_id")
      .execute();
    for (const r of rows) if (r.stack_id !== null) counts.set(r.stack_id, Number(r.n));
    return counts;
  }

  /**
   * An organization's requests (or one stack's, or one machine's) that ended at or after `since`: counts and
   * tokens per minute, those since `recent`, latency percentiles of those answered, and the runtimes' decoding speed.
   */
  async figures(orgId: string, scope: FiguresScope, since: number, recent: number): Promise<RequestFigures> {
    const scoped = sql.join(
      [
        sql`org_id = ${orgId}`,
        sql`id >= ${this.ids.floor(since)}`,
        ...(scope.stackId !== undefined ? [sql`stack_id = ${scope.stackId}`] : []),
        ...(scope.machineId !== undefined ? [sql`machine_id = ${scope.machineId}`] : []),
      ],
      sql` and `,
    );
    const ok = sql`status < 400 and error_code is null`;
    const decoding = sql`${ok} and stream = 1 and completion_tokens > 1 and first_token_ms is not null and latency_ms > first_token_ms`;
    type Sum = number | string | null;
    const { rows } = await sql<{ minute: number | string; requests: number | string; errors: Sum; answered: Sum; prompt_tokens: Sum; completion_tokens: Sum; decode_tokens: Sum; decode_ms: Sum; recent: Sum; recent_tokens: Sum }>`
      select at / 60000 as minute, count(*) as requests,
        sum(case when at >= ${recent} then 1 else 0 end) as recent,
        sum(case when at >= ${recent} then completion_tokens else 0 end) as recent_tokens,
        sum(case when ${ok} then 0 else 1 end) as errors,
        sum(case when ${ok} then 1 else 0 end) as answered,
        sum(prompt_tokens) as prompt_tokens, sum(completion_tokens) as completion_tokens,
        sum(case when ${decoding} then completion_tokens - 1 else 0 end) as decode_tokens,
        sum(case when ${decoding} then latency_ms - first_token_ms else 0 end) as decode_ms
      from request_log where ${scoped} group by at / 60000 order by minute`.execute(this.db);
    let answered = 0;
    let decodeTokens = 0;
    let decodeMs = 0;
    let recentRequests = 0;
    let recentCompletionTokens = 0;
    const minutes = rows.map((r) => {
      answered += Number(r.answered ?? 0);
      recentRequests += Number(r.recent ?? 0);
      recentCompletionTokens += Number(r.recent_tokens ?? 0);
      decodeTokens += Number(r.decode_tokens ?? 0);
      decodeMs += Number(r.decode_ms ?? 0);
      return { minute: Number(r.minute), requests: Number(r.requests), errors: Number(r.errors ?? 0), promptTokens: Number(r.prompt_tokens ?? 0), completionTokens: Number(r.completion_tokens ?? 0) };
    });
    // The latency at a rank of the answered requests sorted by it (nearest rank, as both dialects can).
    const at = async (p: number): Promise<number | null> => {
      if (answered === 0) return null;
      const { rows: [row] } = await sql<{ latency_ms: number }>`select latency_ms from request_log where ${scoped} and ${ok} order by latency_ms limit 1 offset ${Math.ceil(p * answered) - 1}`.execute(this.db);
      return row ? Number(row.latency_ms) : null;
    };
    return { minutes, recentRequests, recentCompletionTokens, p50Ms: await at(0.5), p95Ms: await at(0.95), decodeTokensPerSecond: decodeMs > 0 ? Math.round((decodeTokens / decodeMs) * 10_000) / 10 : null };
  }

  /**
   * Deletes what the log no longer keeps: requests that ended before `before`, each organization of `orgs`'
   * requests beyond its newest `keepPerOrg`, and captures past their time (`now`). Returns how many requests went.
   */
  async prune(options: { before: number; keepPerOrg: number; orgs: Iterable<string>; now: number }): Promise<number> {
    let deleted = await this.deleteInChunks(null, "<", this.ids.floor(options.before));
    for (const orgId of options.orgs) {
      // The newest request beyond what is kept: it and every older one go.
      const edge = await this.db.selectFrom("request_log").select("id").where("org_id", "=", orgId).orderBy("id", "desc").offset(options.keepPerOrg).limit(1).executeTakeFirst();
      if (edge) deleted += await this.deleteInChunks(orgId, "<=", edge.id);
    }
    await this.db.updateTable("request_log").set({ capture_json: null, capture_until: null }).where("capture_until", "is not", null).where("capture_until", "<=", options.now).execute();
    return deleted;
  }

  /**
   * Holds a stack's kept captures to its capture as it is now: none when it is off, none past `hours` after their
   * request when it was shortened (a capture made longer keeps the time it was made with).
   */
  async limitCaptures(stackId: string, hours: number | null): Promise<void> {
    const kept = this.db.updateTable("request_log").where("stack_id", "=", stackId).where("capture_until", "is not", null);
    if (hours === null) await kept.set({ capture_json: null, capture_until: null }).execute();
    else await kept.where((eb) => eb("capture_until", ">", eb("at", "+", hours * 3_600_000))).set((eb) => ({ capture_until: eb("at", "+", hours * 3_600_000) })).execute();
  }

  /**
   * Deletes the requests (of `orgId`, or of all) whose ids sort below `bound` (or up to it), oldest first, so many per
   * statement, letting the event loop run between statements: a minute of a busy gateway is a lot of rows,
   * and one statement deleting them all would hold SQLite (synchronous) for as long.
   */
  private async deleteInChunks(orgId: string | null, op: "<" | "<=", bound: string): Promise<number> {
    let deleted = 0;
    for (;;) {
      let oldest = this.db.selectFrom("request_log").select("id").where("id", op, bound);
      if (orgId !== null) oldest = oldest.where("org_id", "=", orgId);
      const res = await this.db.deleteFrom("request_log").where("id", "in", oldest.orderBy("id").limit(PRUNE_CHUNK)).executeTakeFirst();
      const n = Number(res.numDeletedRows);
      deleted += n;
      if (n < PRUNE_CHUNK) return deleted;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
}
