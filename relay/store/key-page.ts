import { sql, type Expression, type SqlBool } from "kysely";
import type { KEY_SORTS } from "../admin-contract/index.js";
import { foldText, type Db } from "./open-database.js";
import type { Row } from "./tables.js";

/** What a list of keys sorts by (the admin API's `KEY_SORTS`). */
export type KeySort = (typeof KEY_SORTS)[number];

/** A page of an organization's keys, asked as the admin API asks it. */
export interface KeyPageAsk {
  /** Words each found, in any case, in the key's name, prefix or id. */
  q?: string;
  /** `expired`: active, but past its expiry at `now`. */
  state?: "active" | "revoked" | "blocked" | "expired";
  /** Absent: the list's own order (oldest first; `desc` newest first). */
  sort?: KeySort;
  order: "asc" | "desc";
  offset: number;
  limit: number;
  /** What "expired" is judged against, ms since the epoch. */
  now: number;
  /** Use is counted from here on (the last 24 hours), ms since the epoch. */
  usageSince: number;
}

/** A key of a page, with what it served since `usageSince`. */
export type KeyOfPage = Row<"api_keys"> & { requests: number; tokens: number };

/**
 * One page of an organization's keys, searched, filtered, sorted and paged by the database: 10,000 keys cost a
 * browser 50 rows, and the relay a sort in SQL rather than 10,000 objects. Sorting keeps the list's own order
 * among equals, puts nothing (null) last either way, and sorts names by their letters whatever their case, with
 * their numbers as numbers (`makina_natural`, the same key on both databases, compared byte by byte). Search folds
 * case in any script (`makina_fold`). The use of the last day is summed for the page's keys only, unless the page
 * is sorted by it.
 */
export async function keyPage(db: Db, dialect: "sqlite" | "postgres", orgId: string, ask: KeyPageAsk): Promise<{ rows: KeyOfPage[]; total: number }> {
  const expired = sql<SqlBool>`k.expires_at is not null and k.expires_at <= ${ask.now}`;
  // A key's state as the admin API says it: revoked, else blocked, else expired, else active.
  const state = sql<string>`case when k.state = 'revoked' then 'revoked' when k.blocked_at is not null then 'blocked' when ${expired} then 'expired' else 'active' end`;
  let query = db.selectFrom("api_keys as k").where("k.org_id", "=", orgId);
  if (ask.state === "revoked") query = query.where("k.state", "=", "revoked");
  else if (ask.state === "blocked") query = query.where("k.state", "=", "active").where("k.blocked_at", "is not", null);
  else if (ask.state === "expired") query = query.where("k.state", "=", "active").where("k.blocked_at", "is", null).where(expired);
  else if (ask.state === "active") query = query.where("k.state", "=", "active").where("k.blocked_at", "is", null).where(sql<SqlBool>`not (${expired})`);
  for (const word of foldText(ask.q ?? "").split(/\s+/).filter(Boolean)) {
    // LIKE's own characters in a word match themselves.
    const pattern = `%${word.replace(/[!%_]/g, (c) => `!${c}`)}%`;
    const like = (column: Expression<unknown>) => sql<SqlBool>`makina_fold(${column}) like ${pattern} escape '!'`;
    query = query.where((eb) => eb.or([like(sql.ref("k.name")), like(sql.ref("k.prefix")), like(sql.ref("k.id"))]));
  }
  const byUse = ask.sort === "requests_24h" || ask.sort === "tokens_24h";
  const used = db
    .selectFrom("usage_minutes")
    .select(["key_id", sql<number>`sum(requests)`.as("requests"), sql<number>`sum(prompt_tokens + completion_tokens)`.as("tokens")])
    .where("org_id", "=", orgId)
    .where("minute", ">=", ask.usageSince)
    .groupBy("key_id");
  const direction = ask.order === "desc" ? sql`desc` : sql`asc`;
  const sortedBy: Record<KeySort, Expression<unknown>> = {
    // Byte by byte on both: PostgreSQL would otherwise compare by the database's collation.
    name: dialect === "postgres" ? sql`makina_natural(k.name) collate "C"` : sql`makina_natural(k.name)`,
    state,
    created_at: sql.ref("k.created_at"),
    last_used_at: sql.ref("k.last_used_at"),
    expires_at: sql.ref("k.expires_at"),
    requests_24h: sql`coalesce(u.requests, 0)`,
    tokens_24h: sql`coalesce(u.tokens, 0)`,
  };
  const selected = byUse
    ? query.leftJoin(used.as("u"), "u.key_id", "k.id").selectAll("k").select(["u.requests", "u.tokens"])
    : query.selectAll("k").select([sql<null>`null`.as("requests"), sql<null>`null`.as("tokens")]);
  const by = ask.sort ? sortedBy[ask.sort] : undefined;
  // Sorted: nothing last either way, then the list's own order among equals. Not sorted: the list's own order.
  const ordered = by
    ? selected.orderBy(sql`(${by}) is null`).orderBy(sql`${by} ${direction}`).orderBy("k.created_at").orderBy("k.id")
    : selected.orderBy(sql`k.created_at ${direction}`).orderBy(sql`k.id ${direction}`);
  const [found, count] = await Promise.all([
    ordered.limit(ask.limit).offset(ask.offset).execute(),
    query.select((eb) => eb.fn.countAll<number | string>().as("n")).executeTakeFirstOrThrow(),
  ]);
  let rows = found.map((r) => ({ ...r, requests: Number(r.requests ?? 0), tokens: Number(r.tokens ?? 0) }));
  if (!byUse && rows.length > 0) {
    const ofPage = new Map((await used.where("key_id", "in", rows.map((r) => r.id)).execute()).map((u) => [u.key_id, u]));
    rows = rows.map((r) => ({ ...r, requests: Number(ofPage.get(r.id)?.requests ?? 0), tokens: Number(ofPage.get(r.id)?.tokens ?? 0) }));
  }
  return { rows, total: Number(count.n) };
}
