import { MakinaError, type Logger } from "../../proto/index.js";

/** SQLite's result codes, PostgreSQL's error classes and the network's errors for a database that cannot be written now, in words. */
const WHY: [prefix: string, why: string][] = [
  ["08", "the connection to PostgreSQL failed"],
  ["57P", "PostgreSQL is shutting down or restarting"],
  ["53", "PostgreSQL is out of disk, memory or connections"],
  ["ECONNREFUSED", "PostgreSQL refuses connections"],
  ["ECONNRESET", "the connection to PostgreSQL was cut"],
  ["ETIMEDOUT", "PostgreSQL does not answer"],
  ["EHOSTUNREACH", "PostgreSQL cannot be reached"],
  ["ENOTFOUND", "PostgreSQL's host name is unknown"],
  ["SQLITE_FULL", "the disk holding it is full"],
  ["SQLITE_BUSY", "another process holds it locked"],
  ["SQLITE_LOCKED", "it is locked"],
  ["SQLITE_IOERR", "the disk failed a read or a write"],
  ["SQLITE_READONLY", "it is read-only"],
  ["SQLITE_CANTOPEN", "its file cannot be opened"],
  ["SQLITE_NOMEM", "the relay is out of memory"],
];

/**
 * The clear error for a write the relay's database refused (a full disk, a lock held by another process, an
 * I/O error): 503 `storage_unavailable`, saying why and that nothing was changed. Undefined for any other error.
 */
export function storageError(err: unknown): MakinaError | undefined {
  let code = (err as { code?: unknown } | null)?.code;
  // The PostgreSQL client's own words for a connection that ended or never came (they carry no code).
  // (A pooled client whose connection broke while PostgreSQL restarted refuses every query with "Client has
  // encountered a connection error and is not queryable" until the pool drops it.)
  if (typeof code !== "string" && /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable)/.test(String((err as Error | null)?.message))) code = "08006";
  if (typeof code !== "string") return undefined;
  const why = WHY.find(([prefix]) => code.startsWith(prefix))?.[1];
  if (!why) return undefined;
  return new MakinaError("storage_unavailable", `The relay cannot write to its database: ${why} (${code}). Nothing was changed; try again once it is fixed.`, {
    retryAfterMs: 5000,
    cause: err,
  });
}

/**
 * Whether a database error proves the statement never reached PostgreSQL (the connection was refused or never
 * came, the server was starting or shutting down): nothing it asked for can have been committed.
 */
export function neverReachedDatabase(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string" && ["ECONNREFUSED", "ENOTFOUND", "EHOSTUNREACH", "57P03", "53300"].includes(code)) return true;
  return /^timeout exceeded when trying to connect/.test(String((err as Error | null)?.message));
}

/**
 * Writes the relay makes on its own (machine states, hardware, runtime states, usage counts, last-use times):
 * one the database refuses is logged, at most every 10 s per kind, and the relay goes on serving; what it
 * holds in memory is written again later where it can be. `problem` says what went wrong in the last 30 s,
 * for `/health`.
 */
export class StorageHealth {
  private reason: string | null = null;
  private failedAt = 0;
  private readonly loggedAt = new Map<string, number>();

  get problem(): string | null {
    return this.reason !== null && Date.now() - this.failedAt < 30_000 ? this.reason : null;
  }

  private readonly closing = new AbortController();

  constructor(private readonly log: Logger) {}

  /** Stops every retry under way ({@link attemptWhile}) at once: they give up. Idempotent. */
  close(): void {
    this.closing.abort();
  }

  /** Runs `write`; a storage failure is reported and gives undefined, anything else is thrown. */
  async attempt<T>(what: string, write: () => Promise<T>): Promise<T | undefined> {
    try {
      return await write();
    } catch (err) {
      if (!storageError(err)) throw err;
      this.failed(what, err);
      return undefined;
    }
  }

  /**
   * Runs `write` (after `firstWaitMs`) until the database takes it: when it refuses, again after 1 s (or twice
   * `firstWaitMs`), then waiting twice as long each time up to 30 s, for as long as `wanted` holds (thousands
   * of machines linking at once can keep every pooled connection busy for seconds). Gives what `write` gave,
   * or undefined once it is no longer wanted.
   */
  async attemptWhile<T>(what: string, write: () => Promise<T>, wanted: () => boolean, firstWaitMs = 0): Promise<{ value: T } | undefined> {
    const { signal } = this.closing;
    // Each wait ends early once the relay stops (`close`): nothing is retried after.
    const wait = (ms: number) =>
      new Promise<void>((resolve) => {
        if (signal.aborted) return resolve();
        const timer = setTimeout(done, ms).unref();
        function done() {
          clearTimeout(timer);
          signal.removeEventListener("abort", done);
          resolve();
        }
        signal.addEventListener("abort", done);
      });
    if (firstWaitMs) await wait(firstWaitMs);
    for (let waitMs = Math.max(1000, firstWaitMs * 2); wanted() && !signal.aborted; waitMs = Math.min(30_000, waitMs * 2)) {
      try {
        return { value: await write() };
      } catch (err) {
        if (!storageError(err)) throw err;
        this.failed(what, err);
      }
      await wait(waitMs);
    }
    return undefined;
  }

  /**
   * Reports a failed write of `what`. Never throws: it is what writers in the background (a timer's flush, a
   * promise's catch) call, where a throw would be a rejection nobody handles. A failure that is not the
   * database's (a bug) is logged as an error each time, and leaves `/health` as it is.
   */
  failed(what: string, err: unknown): void {
    const e = storageError(err);
    if (!e) {
      this.log.error("a database write failed unexpectedly; the relay keeps serving", { what, error: err instanceof Error ? err.message : String(err) });
      return;
    }
    const now = Date.now();
    this.reason = e.message.replace(/ Nothing was changed.*$/, "");
    this.failedAt = now;
    if (now - (this.loggedAt.get(what) ?? 0) < 10_000) return;
    this.loggedAt.set(what, now);
    this.log.error("a database write failed; the relay keeps serving", { what, reason: this.reason });
  }
}
