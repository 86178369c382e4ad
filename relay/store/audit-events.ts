import { sql } from "kysely";
import { foldText, type Db } from "./open-database.js";
import type { Row } from "./tables.js";
import { SortableIds } from "../ids/index.js";

/** Who did something: the operator (admin token), a signed-in user, or someone not signed in (a failed sign-in). */
export interface AuditActor {
  /** `bootstrap`: `makina up`'s first start. */
  kind: "operator" | "user" | "anonymous" | "bootstrap";
  /** The user's id; null for the operator and for someone not signed in. */
  id: string | null;
  /** The user's login, or the login tried at a failed sign-in. */
  login: string | null;
}

/** One security-relevant action, as recorded. */
export interface AuditEvent {
  id: string;
  /** The organization it happened in; null when none is known (a sign-in to a login that does not exist). */
  orgId: string | null;
  at: number;
  /** What was done: `user.disabled`, `key.revoked`, `sign_in`… */
  action: string;
  outcome: "success" | "failure";
  actor: AuditActor;
  /** The client's address as the relay saw it (behind a trusted proxy, the client's own). */
  address: string | null;
  /** What it was done to. */
  target: { kind: string; id: string; name: string | null } | null;
  /** What changed (`{role: "admin"}`, `{rpm: 60}`), never a secret. */
  detail: Record<string, unknown> | null;
}

const toEvent = (r: Row<"audit_events">): AuditEvent => ({
  id: r.id,
  orgId: r.org_id,
  at: r.at,
  action: r.action,
  outcome: r.outcome,
  actor: { kind: r.actor_kind, id: r.actor_id, login: r.actor_login },
  address: r.address,
  target: r.target_kind && r.target_id ? { kind: r.target_kind, id: r.target_id, name: r.target_name } : null,
  detail: r.detail_json ? (JSON.parse(r.detail_json) as Record<string, unknown>) : null,
});

/**
 * Which events a read of the audit log takes: of `actions` only; from `since` and before `until` (ms); by an
 * `actor` and to a `target`, each named by its id or by words of its login or name.
 */
export interface AuditFilter {
  actions?: readonly string[];
  since?: number;
  until?: number;
  actor?: string;
  target?: string;
}

/** The audit log's table: appended to, read newest first, pruned by age. */
export class AuditEventStore {
  constructor(private readonly db: Db) {}

  /** Ids that sort as the events were recorded. */
  private readonly ids = new SortableIds("aud");

  async insert(event: Omit<AuditEvent, "id">): Promise<AuditEvent> {
    const recorded: AuditEvent = { id: this.ids.next(event.at), ...event };
    await this.db
      .insertInto("audit_events")
      .values({
        id: recorded.id,
        org_id: event.orgId,
        at: event.at,
        action: event.action,
        outcome: event.outcome,
        actor_kind: event.actor.kind,
        actor_id: event.actor.id,
        actor_login: event.actor.login,
        address: event.address,
        target_kind: event.target?.kind ?? null,
        target_id: event.target?.id ?? null,
        target_name: event.target?.name ?? null,
        detail_json: event.detail ? JSON.stringify(event.detail) : null,
      })
      .execute();
    return recorded;
  }

  /**
   * An organization's events, newest first: at most `limit`, those before the event `before` (its id, from the
   * previous page; or its time and id, which hold even once it is pruned: an export's next batch) when given,
   * and only those that match what the filter names (see {@link AuditFilter}).
   */
  async list(orgId: string, options: { limit: number; before?: string | { at: number; id: string } } & AuditFilter): Promise<AuditEvent[]> {
    let query = this.db.selectFrom("audit_events").selectAll().where("org_id", "=", orgId);
    if (options.before) {
      const cursor =
        typeof options.before === "string"
          ? await this.db.selectFrom("audit_events").select(["at", "id"]).where("id", "=", options.before).where("org_id", "=", orgId).executeTakeFirst()
          : options.before;
      if (!cursor) return [];
      query = query.where((eb) => eb.or([eb("at", "<", cursor.at), eb.and([eb("at", "=", cursor.at), eb("id", "<", cursor.id)])]));
    }
    if (options.actions) query = query.where("action", "in", options.actions);
    if (options.since !== undefined) query = query.where("at", ">=", options.since);
    if (options.until !== undefined) query = query.where("at", "<", options.until);
    // Who and what by id, or by every word of their name (any case, in any script).
    for (const [text, id, name] of [
      [options.actor, "actor_id", "actor_login"],
      [options.target, "target_id", "target_name"],
    ] as const) {
      if (!text?.trim()) continue;
      const words = foldText(text).split(/\s+/).filter(Boolean);
      query = query.where((eb) =>
        eb.or([
          eb(id, "=", text.trim()),
          eb.and(words.map((w) => eb(sql`makina_fold(${sql.ref(name)})`, "like", sql<string>`${`%${w.replace(/[!%_]/g, (c) => `!${c}`)}%`} escape '!'`))),
        ]),
      );
    }
    const rows = await query.orderBy("at", "desc").orderBy("id", "desc").limit(options.limit).execute();
    return rows.map(toEvent);
  }

  /** Deletes the events older than `before`; returns how many went. */
  async prune(before: number): Promise<number> {
    const res = await this.db.deleteFrom("audit_events").where("at", "<", before).executeTakeFirst();
    return Number(res.numDeletedRows);
  }
}
