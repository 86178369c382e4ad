import type { Response } from "express";
import type { ExportRoute } from "../../admin-contract/index.js";
import { AUDIT_ACTIONS } from "../../admin-contract/index.js";
import type { Actor } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import { csvLine } from "./csv.js";
import type { StreamHandler } from "./mount-routes.js";

/** Rows read from the database at a time: an export of 100,000 holds a thousand in memory, never all. */
const BATCH = 1000;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * Writes `chunk`, waiting while the client reads what came before (a slow reader holds the export back rather
 * than fill the relay's memory). False once the client has gone: the export stops.
 */
function send(res: Response, chunk: string): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return Promise.resolve(false);
  if (res.write(chunk)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (open: boolean) => {
      res.off("drain", drained);
      res.off("close", closed);
      resolve(open);
    };
    const drained = () => done(true);
    const closed = () => done(false);
    res.on("drain", drained);
    res.on("close", closed);
  });
}

/**
 * Streams batches as CSV: the header line and the first batch once it is read (so a refusal, before it, is
 * still an error in the API's shape), then batch after batch, each read after the last was written.
 */
async function streamCsv<T>(res: Response, name: string, header: readonly string[], first: T[], next: (last: T) => Promise<T[]>, line: (row: T) => string): Promise<void> {
  res.status(200);
  res.setHeader("content-type", "text/csv; charset=utf-8");
  res.setHeader("content-disposition", `attachment; filename="${name}-${new Date().toISOString().slice(0, 10)}.csv"`);
  res.setHeader("cache-control", "no-store");
  if (!(await send(res, csvLine(header)))) return;
  let batch = first;
  while (batch.length > 0) {
    if (!(await send(res, batch.map(line).join("")))) return;
    if (batch.length < BATCH) break;
    batch = await next(batch[batch.length - 1]!);
  }
  res.end();
}

/** The request log and the audit log as CSV, with the filters of their pages, streamed newest first. */
export function exportRoutes(control: ControlPlane): { [K in ExportRoute]: StreamHandler<K, Actor> } {
  return {
    "GET /admin/v1/requests.csv": async (input, actor, res) => {
      const { org, stack, key, model, status, q, api, service_tier } = input.query();
      const filter = { stackId: stack, keyId: key, model, status, q, api, serviceTier: service_tier };
      const read = async (beforeId?: string) => (await control.activity.requests(actor, org, { ...filter, beforeId }, { offset: 0, limit: BATCH, uncounted: true })).rows;
      await streamCsv(
        res,
        "requests",
        ["at", "request_id", "api", "service_tier", "key_id", "key_name", "model", "stack_id", "stack_name", "machine_id", "stream", "status", "error_code", "prompt_tokens", "completion_tokens", "cached_tokens", "latency_ms", "first_token_ms", "load_ms", "id"],
        await read(),
        (last) => read(last.id),
        (r) => csvLine([iso(r.at), r.requestId, r.api, r.serviceTier, r.keyId, r.keyName, r.model, r.stackId, r.stackName, r.machineId, r.stream, r.status, r.errorCode, r.promptTokens, r.completionTokens, r.cachedTokens, r.latencyMs, r.firstTokenMs, r.loadMs, r.id]),
      );
    },
    "GET /admin/v1/audit.csv": async (input, actor, res) => {
      const query = input.query();
      const actions = query.action === undefined ? undefined : AUDIT_ACTIONS.filter((a) => a === query.action || a.startsWith(`${query.action}.`));
      const filter = { actions, actor: query.actor, target: query.target, since: query.since, until: query.until };
      const read = (before?: { at: number; id: string }) => control.activity.audit(actor, query.org, { limit: BATCH, before, ...filter });
      await streamCsv(
        res,
        "audit",
        ["at", "action", "outcome", "actor_kind", "actor_id", "actor_login", "address", "target_kind", "target_id", "target_name", "detail", "id"],
        await read(),
        (last) => read({ at: last.at, id: last.id }),
        (e) => csvLine([iso(e.at), e.action, e.outcome, e.actor.kind, e.actor.id, e.actor.login, e.address, e.target?.kind, e.target?.id, e.target?.name, e.detail && JSON.stringify(e.detail), e.id]),
      );
    },
  };
}
