import type { ApiKeyRecord } from "../keys/index.js";
import type { Admission, RefusalBudget } from "../limits/index.js";
import type { RelayMetrics } from "../metrics/index.js";
import type { RequestLog, UsageRecorder } from "../usage/index.js";
import { captureCall, captureOf, captureText, type Capture } from "./exchange-capture.js";

/** Tokens a runtime counted for a request. */
export interface TokenCount {
  promptTokens: number;
  completionTokens: number;
  /** Of the prompt's, those the runtime did not evaluate again. */
  cachedTokens?: number;
}

/** Where a request's facts are settled: its key's rate limits (through its admission), the usage counts, the metrics, the request log and the key's refusal budget. */
export interface LedgerBooks {
  usage: Pick<UsageRecorder, "record">;
  requests: Pick<RequestLog, "record">;
  metrics: Pick<RelayMetrics, "started" | "usage">;
  refusals: Pick<RefusalBudget, "record">;
}

/** What a response is when it closes. */
export interface ClosedResponse {
  statusCode: number;
  headersSent: boolean;
  writableFinished: boolean;
}

/** The clocks a ledger reads: a monotonic one for durations, the wall clock for the log. */
export interface LedgerClock {
  /** ms, monotonic (`performance.now`). */
  mono(): number;
  /** ms since the epoch (`Date.now`). */
  wall(): number;
}

const SYSTEM_CLOCK: LedgerClock = { mono: () => performance.now(), wall: () => Date.now() };

/**
 * The one account of one gateway request. The request path tells it each fact once, as it becomes known (the
 * key, what was asked, where it runs, its admission, that its runtime started, its first token, the runtime's
 * count of tokens, a failure, the response's close), and the ledger settles every book from them, each once:
 *
 * - the key's rate limits: the admission settled with the tokens counted (the estimate kept when the runtime
 *   failed), or refunded when the request was not served;
 * - the usage counts: a request that never reached a runtime counts as an error with no tokens; one that did
 *   counts what its runtime said it used, when it says so (possibly after the response closed: a client that
 *   left mid-answer pays for what was generated);
 * - the metrics: the request when its response closes, the tokens when counted;
 * - the request log: every request of a known key, written once the response closed and the runtime's count
 *   (if it ran) came;
 * - the refusal budget: a refused request of a known key.
 *
 * It never awaits, and its books take what they are told at once (their writes to the database come later, on
 * their own timers): a book's failure to write is the book's own matter.
 */
export class RequestLedger {
  private key: ApiKeyRecord | undefined;
  private askedModel = "";
  private stream = false;
  private model = "";
  private stackId: string | null = null;
  private machineId: string | null = null;
  private metered = true;
  private admission: Admission | undefined;
  private capture: Capture | undefined;
  private ran = false;
  private firstTokenAt: number | undefined;
  private loadMs: number | null = null;
  /** The runtime's count: undefined until it came, null when the runtime failed. */
  private count: TokenCount | null | undefined;
  private errorCode: string | null = null;
  /** The request log's entry, waiting for the runtime's count (the response closed before it came). */
  private pendingLog: (() => void) | undefined;
  private isClosed = false;
  /** The tier it is served at, once planned. */
  private serviceTier = "";
  private readonly startedAt: number;
  private readonly metricsDone: ReturnType<RelayMetrics["started"]>;

  constructor(
    private readonly books: LedgerBooks,
    /** The request's id, as its answer and log carry it. */
    readonly requestId: string,
    private readonly clock: LedgerClock = SYSTEM_CLOCK,
    /** The API it called (`chat/completions`, `embeddings`…), as the request log keeps it. */
    private readonly api = "",
  ) {
    this.startedAt = clock.mono();
    this.metricsDone = books.metrics.started();
  }

  /** The key that made the request, known from here on: refused ones too (expired, revoked), so their refusals are logged as theirs. */
  keyKnown(key: ApiKeyRecord): void {
    this.key = key;
  }

  /** What the body asked for: a model id as stacks have them (empty otherwise), and whether streamed. */
  asked(model: string, stream: boolean): void {
    this.askedModel = model;
    this.stream = stream;
  }

  /**
   * Where it runs: the model that answers (a router may have sent it on), its stack and machine. A request that
   * is not `metered` (it only counts tokens) uses none of the key's.
   */
  planned(route: { model: string; stackId: string; machineId: string; metered: boolean; serviceTier?: string }): void {
    this.serviceTier = route.serviceTier ?? "";
    this.model = route.model;
    this.stackId = route.stackId;
    this.machineId = route.machineId;
    this.metered = route.metered;
  }

  /** The key's rate limits admitted it, with its estimate counted. */
  admitted(admission: Admission): void {
    this.admission = admission;
  }

  /** The stack keeps prompts and answers: these messages, and the answer as it comes, until `until` (ms since the epoch). */
  capturing(messages: unknown, until: number): void {
    this.capture = captureOf(messages, until);
  }

  /** More of the answer's text (kept when capturing). */
  answerText(text: string): void {
    if (this.capture) captureText(this.capture, text);
  }

  /** A piece of a tool call of the answer (kept when capturing). */
  answerToolCall(name: string, args: string, index: number): void {
    if (this.capture) captureCall(this.capture, name, args, index);
  }

  /** Its runtime started on it: from here the runtime counts its tokens ({@link counted}), whatever happens next. */
  started(): void {
    this.ran = true;
  }

  /** The first token (streamed) or the whole answer (not streamed) came from the machine. */
  /** The request waited `ms` for its model to load (an on-demand stack's), before the machine began it. */
  waitedForLoad(ms: number): void {
    this.loadMs = ms;
  }

  firstToken(): void {
    this.firstTokenAt ??= this.clock.mono();
  }

  /** The runtime's count of the tokens the request used; null when the runtime failed. Counted once. */
  counted(tokens: TokenCount | null): void {
    if (this.count !== undefined) return;
    // A count means its runtime ran, whether or not the route had said so yet.
    this.ran = true;
    // A request that only counts (Anthropic's count_tokens) uses no tokens of the key's: its answer says how many.
    const used = !this.metered && tokens ? { promptTokens: 0, completionTokens: 0 } : tokens;
    this.count = used;
    this.admission?.settle(used ? used.promptTokens + used.completionTokens : null);
    if (this.key) this.books.usage.record({ orgId: this.key.orgId, keyId: this.key.id, model: this.model, promptTokens: used?.promptTokens ?? 0, completionTokens: used?.completionTokens ?? 0, failed: used === null, tier: this.serviceTier });
    if (used) this.books.metrics.usage(this.model, used.promptTokens, used.completionTokens);
    const log = this.pendingLog;
    this.pendingLog = undefined;
    log?.();
  }

  /** Refused or failed before its answer began, answered with `status` and the error `code`. */
  refused(code: string, status: number): void {
    this.errorCode = code;
    if (this.key) this.books.refusals.record(this.key, status);
  }

  /** Its stream broke after the first byte: the client left (`canceled`) or the machine's answer ended early. */
  broke(code: "canceled" | "stream_incomplete"): void {
    this.errorCode = code;
  }

  /**
   * It will not be served (an error before its answer began): its admission is refunded, unless it got its turn
   * and then was canceled, timed out or ended by the relay's stop (the machine may have worked on it: a client
   * that went away keeps paying for the tokens generated until then, and so does one whose request outlived the
   * relay's drain period).
   */
  notServed(code: string, answerBegan: boolean, hadTurn: boolean, endedByRelay = false): void {
    if (!answerBegan && (!hadTurn || (code !== "canceled" && code !== "timeout" && !endedByRelay))) this.admission?.refund();
  }

  /** The response closed: the metrics count it, and the request log gets it (now, or once the runtime's count comes). */
  closed(res: ClosedResponse): void {
    if (this.isClosed) return;
    this.isClosed = true;
    const end = this.clock.mono();
    const durationMs = end - this.startedAt;
    this.metricsDone({
      model: this.model,
      status: res.statusCode,
      keyId: this.key?.id ?? "",
      errorCode: this.errorCode,
      durationSeconds: durationMs / 1000,
      firstTokenSeconds: this.firstTokenAt === undefined || !this.stream ? null : (this.firstTokenAt - this.startedAt) / 1000,
    });
    const key = this.key;
    if (!key) return;
    // A refused request is counted under the model that answers, or none: the text a client sends as `model`
    // never becomes a usage group of its own (a key could make up any number).
    if (!this.ran) this.books.usage.record({ orgId: key.orgId, keyId: key.id, model: this.model, promptTokens: 0, completionTokens: 0, failed: true, tier: this.serviceTier });
    const at = this.clock.wall();
    // The client went away before any answer: nginx's 499, as no status was sent.
    const status = res.headersSent ? res.statusCode : 499;
    const errorCode = this.errorCode ?? (res.writableFinished ? null : "canceled");
    const firstTokenMs = this.firstTokenAt === undefined ? null : Math.round(this.firstTokenAt - this.startedAt);
    const log = () => {
      const capture = this.capture;
      this.books.requests.record({
        at,
        orgId: key.orgId,
        requestId: this.requestId,
        api: this.api,
        serviceTier: this.serviceTier,
        keyId: key.id,
        model: this.model || this.askedModel,
        stackId: this.stackId,
        machineId: this.machineId,
        stream: this.stream,
        status,
        errorCode,
        promptTokens: this.count?.promptTokens ?? 0,
        completionTokens: this.count?.completionTokens ?? 0,
        cachedTokens: this.count?.cachedTokens ?? 0,
        latencyMs: Math.round(durationMs),
        firstTokenMs,
        loadMs: this.loadMs,
        captureJson: capture ? JSON.stringify({ messages: capture.messages, answer: capture.answer, toolCalls: capture.toolCalls.filter(Boolean), truncated: capture.truncated }) : null,
        captureUntil: capture?.until ?? null,
      });
    };
    if (this.ran && this.count === undefined) this.pendingLog = log;
    else log();
  }
}
