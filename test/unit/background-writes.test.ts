import { afterEach, describe, expect, it, vi } from "vitest";
import { createLogger } from "../../proto/index.js";
import { StorageHealth, storageError } from "../../relay/health/index.js";
import { RequestLog, UsageRecorder } from "../../relay/usage/index.js";
import type { NewRequestLogEntry } from "../../relay/store/index.js";

/**
 * What the relay writes on its own, on timers (the request log, the usage counts), when the database refuses: it
 * is reported and tried again, and nothing rejects without a handler. Once seen while PostgreSQL restarted: a
 * pooled client left broken refused with a message and no code, which the storage report rethrew from a timer's
 * catch, an unhandled rejection.
 */
describe("writes the relay makes in the background, when the database refuses them", () => {
  const notQueryable = () => new Error("Client has encountered a connection error and is not queryable");
  const lines: Record<string, unknown>[] = [];
  const storage = new StorageHealth(createLogger({ write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) }));
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on("unhandledRejection", onUnhandled);
  afterEach(() => {
    lines.length = 0;
  });

  const entry = (requestId: string): NewRequestLogEntry => ({
    at: Date.now(), orgId: "org_1", requestId, keyId: "key_1", model: "m", stackId: null, machineId: null, stream: false, status: 200, errorCode: null,
    promptTokens: 1, completionTokens: 1, latencyMs: 1, firstTokenMs: null, loadMs: null, captureJson: null, captureUntil: null,
  });

  it("takes a broken pooled PostgreSQL client for the database being unavailable", () => {
    expect(storageError(notQueryable())?.message).toMatch(/^The relay cannot write to its database: the connection to PostgreSQL failed \(08006\)/);
  });

  it("the request log: reported, kept, written once the database takes it, with no unhandled rejection", async () => {
    const written: NewRequestLogEntry[] = [];
    let refuse = true;
    const log = new RequestLog(
      { requests: { insert: async (rows: readonly NewRequestLogEntry[]) => (refuse ? Promise.reject(notQueryable()) : void written.push(...rows)) } } as never,
      { retentionMs: 60_000, keepPerOrg: 100, flushIntervalMs: 5, onWriteError: (what, err) => storage.failed(what, err) },
    );
    try {
      log.record(entry("req_1"));
      await vi.waitFor(() => expect(storage.problem).toBe("The relay cannot write to its database: the connection to PostgreSQL failed (08006)."), { timeout: 5000, interval: 5 });
      refuse = false;
      await vi.waitFor(() => expect(written.map((r) => r.requestId)).toEqual(["req_1"]), { timeout: 5000, interval: 5 });
    } finally {
      await log.close();
    }
    expect(unhandled).toEqual([]);
  });

  it("a failure that is not the database's is logged as an error, never thrown from the timer", async () => {
    const usage = new UsageRecorder({} as never, { flushIntervalMs: 5, onWriteError: (err) => storage.failed("usage counts", err) });
    (usage as unknown as { write: () => Promise<void> }).write = () => Promise.reject(new TypeError("a bug in a query"));
    try {
      usage.record({ orgId: "org_1", keyId: "key_1", model: "m", promptTokens: 1, completionTokens: 1, failed: false });
      await vi.waitFor(() => expect(lines).toContainEqual(expect.objectContaining({ level: "error", msg: "a database write failed unexpectedly; the relay keeps serving", what: "usage counts", error: "a bug in a query" })), { timeout: 5000, interval: 5 });
    } finally {
      (usage as unknown as { write: () => Promise<void> }).write = async () => undefined;
      await usage.close();
    }
    expect(unhandled).toEqual([]);
  });

  it("a write attempted in the foreground still throws what is not the database's", async () => {
    await expect(storage.attempt("machine states", () => Promise.reject(new TypeError("a bug")))).rejects.toThrow("a bug");
    await expect(storage.attempt("machine states", () => Promise.reject(notQueryable()))).resolves.toBeUndefined();
  });
});
