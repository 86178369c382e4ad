import type { FiguresScope, NewRequestLogEntry, RequestFigures, RequestFilter, Store } from "../store/index.js";

/** Options of {@link RequestLog}. */
export interface RequestLogOptions {
  /** Requests older than this are deleted, ms. */
  retentionMs: number;
  /** Each organization's newest requests kept; older ones are deleted. */
  keepPerOrg: number;
  /** How often requests are written to the database. @default 1000 */
  flushIntervalMs?: number;
  /** How often what is no longer kept is deleted. @default 60000 */
  pruneIntervalMs?: number;
  /** Requests held for the next write at most; beyond, while the database is slow or away, requests go unlogged (counted). @default 20000 */
  maxPending?: number;
  /** Where a write or a pruning the database refused is reported. */
  onWriteError?: (what: string, err: unknown) => void;
  /** Refused requests (status 400 and up, before any runtime) logged per key per minute at most; beyond, only counted in usage. @default 60 */
  maxRefusedPerKeyMinute?: number;
  /** Captures (prompts and answers) held for the next write at most, in characters; beyond, requests are logged without theirs. @default 32 Mi */
  maxPendingCaptureChars?: number;
  /** Where requests that could not be held are reported, once per write. */
  onDropped?: (count: number) => void;
  now?: () => number;
}

/**
 * The gateway's request log: every request of a known key (answered, failed or refused), held in memory and
 * written to the database in one transaction every second, so logging costs the request path an array push.
 * Relays sharing a database write to the same table, so the log is every relay's. Reads write first, so a page
 * shows what was served until then. Kept bounded: older than the retention, or beyond each organization's
 * newest `keepPerOrg`, a request is deleted (every minute); a capture (prompt and answer) is dropped once
 * its stack's capture time has passed.
 */
export class RequestLog {
  private pending: NewRequestLogEntry[] = [];
  private dropped = 0;
  /** Characters of the captures held in `pending`. */
  private pendingCaptureChars = 0;
  /** Tries of the batch being written that the database refused: a batch it refuses three times is dropped. */
  private failures = 0;
  /** Refused requests logged this minute, per key. */
  private refused = new Map<string, number>();
  private refusedMinute = 0;
  /** Organizations that logged requests since the last pruning: only their sizes are checked. */
  private grown = new Set<string>();
  private flushing: Promise<void> | undefined;
  private pruning: Promise<void> | undefined;
  private readonly timers: NodeJS.Timeout[];
  private readonly now: () => number;
  private readonly maxPending: number;

  constructor(
    private readonly store: Pick<Store, "requests">,
    private readonly options: RequestLogOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.maxPending = options.maxPending ?? 20_000;
    const flush = setInterval(() => void this.flush().catch((err: unknown) => options.onWriteError?.("the request log", err)), options.flushIntervalMs ?? 1000);
    const prune = setInterval(() => void this.prune(), options.pruneIntervalMs ?? 60_000);
    flush.unref();
    prune.unref();
    this.timers = [flush, prune];
  }

  /**
   * Logs a request that ended (it is kept as given, its capture dropped if need be). A key's refusals beyond so many a minute are not
   * logged one by one (a key sending only refusals could push an organization's history out); a capture that
   * does not fit what is held is left out (the request is logged without it).
   */
  record(request: NewRequestLogEntry): void {
    if (this.pending.length >= this.maxPending) {
      this.dropped++;
      return;
    }
    if (request.status >= 400 && request.promptTokens === 0 && request.completionTokens === 0 && request.keyId !== null) {
      const minute = Math.floor(request.at / 60_000);
      if (minute !== this.refusedMinute) {
        this.refusedMinute = minute;
        this.refused.clear();
      }
      const n = (this.refused.get(request.keyId) ?? 0) + 1;
      this.refused.set(request.keyId, n);
      if (n > (this.options.maxRefusedPerKeyMinute ?? 60)) return;
    }
    if (request.captureJson !== null) {
      if (this.pendingCaptureChars + request.captureJson.length > (this.options.maxPendingCaptureChars ?? 32 * 1024 * 1024)) {
        request.captureJson = null;
        request.captureUntil = null;
      }
      this.pendingCaptureChars += request.captureJson?.length ?? 0;
    }
    this.pending.push(request);
  }

  /** Writes what was logged since the last write. A failed write keeps the requests for the next try, within `maxPending`. */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing.catch(() => undefined);
    if (this.dropped > 0) {
      this.options.onDropped?.(this.dropped);
      this.dropped = 0;
    }
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    this.pendingCaptureChars = 0;
    this.flushing = this.store.requests.insert(batch).then(
      () => {
        this.failures = 0;
        for (const r of batch) this.grown.add(r.orgId);
      },
      (err: unknown) => {
        // Tried again with what came meanwhile, the oldest first; what does not fit is counted as dropped. A batch
        // the database refused three times running is dropped whole: something in it may be what it refuses,
        // and the log must not stop for one bad row.
        if (++this.failures >= 3) {
          this.failures = 0;
          this.dropped += batch.length;
        } else {
          const kept = batch.concat(this.pending);
          this.dropped += Math.max(0, kept.length - this.maxPending);
          this.pending = kept.slice(kept.length - this.maxPending);
        }
        this.pendingCaptureChars = this.pending.reduce((n, r) => n + (r.captureJson?.length ?? 0), 0);
        throw err;
      },
    );
    try {
      await this.flushing;
    } finally {
      this.flushing = undefined;
    }
  }

  /** An organization's requests matching `filter`, newest first, a page at a time, with how many match. */
  async list(orgId: string, filter: RequestFilter, page: { offset: number; limit: number; uncounted?: boolean }): ReturnType<Store["requests"]["list"]> {
    // What the database has, even when the last requests cannot be written just now (reported by the timer).
    await this.flush().catch(() => undefined);
    return this.store.requests.list(orgId, filter, page);
  }

  /** How many requests each of `stackIds` (one organization's) answered or failed since `since`. */
  async countsByStack(orgId: string, stackIds: readonly string[], since: number): Promise<Map<string, number>> {
    if (stackIds.length === 0) return new Map();
    await this.flush().catch(() => undefined);
    return this.store.requests.countsByStack(orgId, stackIds, since);
  }

  /** Figures of an organization's requests (or one stack's or machine's) since `since`, with those since `recent` apart. */
  async figures(orgId: string, scope: FiguresScope, since: number, recent: number): Promise<RequestFigures> {
    await this.flush().catch(() => undefined);
    return this.store.requests.figures(orgId, scope, since, recent);
  }

  /** One request, with its capture if it is still kept. */
  async get(id: string): ReturnType<Store["requests"]["get"]> {
    await this.flush().catch(() => undefined);
    return this.store.requests.get(id);
  }

  /** Deletes what is no longer kept (one pruning at a time); a database that refuses is reported, and tried again next time. */
  prune(): Promise<void> {
    this.pruning ??= (async () => {
      const orgs = this.grown;
      this.grown = new Set();
      const now = this.now();
      try {
        await this.store.requests.prune({ before: now - this.options.retentionMs, keepPerOrg: this.options.keepPerOrg, orgs, now });
      } catch (err) {
        for (const o of orgs) this.grown.add(o);
        this.options.onWriteError?.("the request log's pruning", err);
      } finally {
        this.pruning = undefined;
      }
    })();
    return this.pruning;
  }

  /** Writes what is left and stops the timers. */
  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    await this.pruning;
    await this.flush();
  }
}
