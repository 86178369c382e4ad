import { sql } from "kysely";
import type { Db } from "./open-database.js";

/** Failed sign-ins counted under one key, and when the last was. */
export interface FailureCount {
  failures: number;
  lastAt: number;
}

/** Addresses kept per user, the most recent. */
const ADDRESSES_PER_USER = 16;

/**
 * What sign-in throttling remembers, in the database so that every relay on it shares it and a restart keeps it:
 * failed sign-ins counted by key (opaque to the store), and the addresses each user signed in from. A count idle
 * for `forgetAfterMs` starts again from one; idle rows are swept by whoever records failures.
 */
export class SignInStore {
  constructor(
    private readonly db: Db,
    private readonly dialect: "sqlite" | "postgres",
  ) {}

  /** The counts of `keys` whose last failure is after `since` (older ones are as good as none). */
  async counts(keys: string[], since: number): Promise<Map<string, FailureCount>> {
    const rows = keys.length === 0 ? [] : await this.db.selectFrom("sign_in_failures").select(["key", "failures", "last_at"]).where("key", "in", keys).where("last_at", ">", since).execute();
    return new Map(rows.map((r) => [r.key, { failures: Number(r.failures), lastAt: Number(r.last_at) }]));
  }

  /**
   * Counts one more failure under each key at `now` (a count idle for more than `forgetAfterMs` starts again), in
   * one statement per key: relays counting at once never lose a failure. Returns the counts after.
   */
  async fail(keys: string[], now: number, forgetAfterMs: number): Promise<Map<string, FailureCount>> {
    const counts = new Map<string, FailureCount>();
    // The later of two relays' clocks.
    const greatest = this.dialect === "sqlite" ? sql<number>`max(excluded.last_at, sign_in_failures.last_at)` : sql<number>`GREATEST(excluded.last_at, sign_in_failures.last_at)`;
    for (const key of keys) {
      const row = await this.db
        .insertInto("sign_in_failures")
        .values({ key, failures: 1, last_at: now })
        .onConflict((oc) =>
          oc.column("key").doUpdateSet({
            failures: sql<number>`CASE WHEN excluded.last_at - sign_in_failures.last_at > ${forgetAfterMs} THEN 1 ELSE sign_in_failures.failures + 1 END`,
            last_at: greatest,
          }),
        )
        .returning(["failures", "last_at"])
        .executeTakeFirstOrThrow();
      counts.set(key, { failures: Number(row.failures), lastAt: Number(row.last_at) });
    }
    return counts;
  }

  /** Forgets the count under `key` (a right password). */
  async clear(key: string): Promise<void> {
    await this.db.deleteFrom("sign_in_failures").where("key", "=", key).execute();
  }

  /** Deletes counts whose last failure is at or before `before`. */
  async sweep(before: number): Promise<void> {
    await this.db.deleteFrom("sign_in_failures").where("last_at", "<=", before).execute();
  }

  /** Whether the user with this login signed in from `address` (one of its 16 most recent). */
  async isKnown(login: string, address: string): Promise<boolean> {
    const row = await this.db
      .selectFrom("sign_in_addresses")
      .innerJoin("users", "users.id", "sign_in_addresses.user_id")
      .select("sign_in_addresses.last_at")
      .where("users.login", "=", login)
      .where("sign_in_addresses.address", "=", address)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Remembers that a user signed in from `address` at `now`; only its 16 most recent addresses are kept. */
  async remember(userId: string, address: string, now: number): Promise<void> {
    await this.db
      .insertInto("sign_in_addresses")
      .values({ user_id: userId, address, last_at: now })
      .onConflict((oc) => oc.columns(["user_id", "address"]).doUpdateSet({ last_at: now }))
      .execute();
    const kept = this.db.selectFrom("sign_in_addresses").select("address").where("user_id", "=", userId).orderBy("last_at", "desc").orderBy("address").limit(ADDRESSES_PER_USER);
    await this.db.deleteFrom("sign_in_addresses").where("user_id", "=", userId).where("address", "not in", kept).execute();
  }
}
