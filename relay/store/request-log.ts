import { sql } from "kysely";
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
export interface LoggedRequest {
  id: string;
  orgId: string;
  /** When it ended, ms since the epoch. */
  at: number;
  /** The `x-request-id` the client got. */
  requestId: string;
  keyId: string | null;
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
  latencyMs: number;
  /** Time to the first token (or the whole answer, not streamed); null when none came. */
  firstTokenMs: number | null;
  /** Prompt and answer, only while the stack's capture keeps them. */
  capture: CapturedExchange | null;
  /** Until when the capture is kept. */
  captureUntil: number | null;
}

/** Which requests a list shows: the HTTP status (`ok`, `error`, a class such as `4xx`, or one status), a stack, a key, a model, words. */
export interface RequestFilter {
  status?: "ok" | "error" | "2xx" | "4xx" | "5xx" | number;
  stackId?: string;
  keyId?: string;
  model?: string;
  /** A request id, or part of a model's name. */
  q?: string;
}

/** Rows of one insert: 17 parameters each, well under SQLite's and PostgreSQL's limits. */
const ROWS_PER_STATEMENT = 500;

const toRequest = (r: Row<"request_log">, withCapture: boolean): LoggedRequest => ({
  id: r.id,
  orgId: r.org_id,
  at: Number(r.at),
  requestId: r.request_id,
  keyId: r.key_id,
  model: r.model,
  stackId: r.stack_id,
  machineId: r.machine_id,
  stream: r.stream === 1,
  status: r.status,
  errorCode: r.error_code,
  promptTokens: r.prompt_tokens,
  completionTokens: r.completion_tokens,
  latencyMs: r.latency_ms,
  firstTokenMs: r.first_token_ms,
  capture: withCapture && r.capture_json ? (JSON.parse(r.capture_json) as CapturedExchange) : null,
  captureUntil: r.capture_json !== null && r.capture_until !== null ? Number(r.capture_until) : null,
});

/** The request log's table: appended to in batches, read newest first a page at a time, pruned by age and size. */
export class RequestLogStore {
  /** Ids that sort as the requests ended. */
  private readonly ids = new SortableIds("req");

  constructor(private readonly db: Db) {}

  /** Appends requests in one transaction (a statement per 500). */
  async insert(requests: readonly Omit<LoggedRequest, "id">[]): Promise<void> {
    if (requests.length === 0) return;
    const rows = requests.map((r) => ({
      id: this.ids.next(r.at),
      org_id: r.orgId,
      at: r.at,
      request_id: r.requestId,
      key_id: r.keyId,
      model: r.model,
      stack_id: r.stackId,
      machine_id: r.machineId,
      stream: r.stream ? 1 : 0,
      status: r.status,
      error_code: r.errorCode,
      prompt_tokens: r.promptTokens,
      completion_tokens: r.completionTokens,
      latency_ms: r.latencyMs,
      first_token_ms: r.firstTokenMs,
      capture_json: r.capture ? JSON.stringify(r.capture) : null,
      capture_until: r.capture ? r.captureUntil : null,
    }));
    await transaction(this.db, async (trx) => {
      for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) await trx.insertInto("request_log").values(rows.slice(i, i + ROWS_PER_STATEMENT)).execute();
    });
  }

  /**
   * An organization's requests matching `filter`, newest first: `limit` of them after the first `offset`, with
   * their key's and stack's names (null once deleted), and how many match in all. Captures are left out.
   */
  async list(orgId: string, filter: RequestFilter, page: { offset: number; limit: number }): Promise<{ rows: (LoggedRequest & { keyName: string | null; stackName: string | null })[]; total: number }> {
    let query = this.db.selectFrom("request_log as r").where("r.org_id", "=", orgId);
    if (filter.stackId !== undefined) query = query.where("r.stack_id", "=", filter.stackId);
    if (filter.keyId !== undefined) query = query.where("r.key_id", "=", filter.keyId);
    if (filter.model !== undefined) query = query.where("r.model", "=", filter.model);
    const status = filter.status;
    if (status === "ok") query = query.where("r.status", "<", 400).where("r.error_code", "is", null);
    else if (status === "error") query = query.where((eb) => eb.or([eb("r.status", ">=", 400), eb("r.error_code", "is not", null)]));
    else if (typeof status === "string") query = query.where("r.status", ">=", Number(status[0]) * 100).where("r.status", "<", Number(status[0]) * 100 + 100);
    else if (typeof status === "number") query = query.where("r.status", "=", status);
    const q = filter.q?.trim();
    if (q) {
      // Part of a model's name, any case (LIKE's own characters in the words match themselves), or a request id.
      const pattern = `%${q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      query = query.where((eb) => eb.or([eb("r.request_id", "=", q), eb(sql`lower(r.model)`, "like", sql<string>`${pattern} escape '\\'`)]));
    }
    const [rows, count] = await Promise.all([
      query
        .leftJoin("api_keys as k", "k.id", "r.key_id")
        .leftJoin("stacks as s", "s.id", "r.stack_id")
        .select(["r.id", "r.org_id", "r.at", "r.request_id", "r.key_id", "r.model", "r.stack_id", "r.machine_id", "r.stream", "r.status", "r.error_code", "r.prompt_tokens", "r.completion_tokens", "r.latency_ms", "r.first_token_ms", "r.capture_until", "k.name as key_name", "s.name as stack_name"])
        .select(sql<string | null>`case when r.capture_json is null then null else '' end`.as("capture_json"))
        .orderBy("r.id", "desc")
        .limit(page.limit)
        .offset(page.offset)
        .execute(),
      query.select((eb) => eb.fn.countAll<number | string>().as("n")).executeTakeFirstOrThrow(),
    ]);
    return { rows: rows.map((r) => ({ ...toRequest(r, false), keyName: r.key_name, stackName: r.stack_name })), total: Number(count.n) };
  }

  /** One request, its capture with it and its key's and stack's names; undefined when there is none such. */
  async get(id: string): Promise<(LoggedRequest & { keyName: string | null; stackName: string | null }) | undefined> {
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
   * Deletes what the log no longer keeps: requests that ended before `before`, each organization of `orgs`'
   * requests beyond its newest `keepPerOrg`, and captures past their time (`now`). Returns how many requests went.
   */
  async prune(options: { before: number; keepPerOrg: number; orgs: Iterable<string>; now: number }): Promise<number> {
    let deleted = 0;
    const old = await this.db.deleteFrom("request_log").where("id", "<", this.ids.floor(options.before)).executeTakeFirst();
    deleted += Number(old.numDeletedRows);
    for (const orgId of options.orgs) {
      // The newest request beyond what is kept: it and every older one go.
      const edge = await this.db.selectFrom("request_log").select("id").where("org_id", "=", orgId).orderBy("id", "desc").offset(options.keepPerOrg).limit(1).executeTakeFirst();
      if (!edge) continue;
      const res = await this.db.deleteFrom("request_log").where("org_id", "=", orgId).where("id", "<=", edge.id).executeTakeFirst();
      deleted += Number(res.numDeletedRows);
    }
    await this.db.updateTable("request_log").set({ capture_json: null, capture_until: null }).where("capture_until", "is not", null).where("capture_until", "<=", options.now).execute();
    return deleted;
  }
}
