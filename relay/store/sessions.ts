import type { Db } from "./open-database.js";

/** A signed-in browser session, found by the hash of its cookie value. */
export interface SessionRecord {
  userId: string;
  /** Sent back by the web application in `X-CSRF-Token` on every state-changing call. */
  csrfToken: string;
  createdAt: number;
  expiresAt: number;
}

/** Web sessions; the cookie value itself is never stored. */
export class SessionStore {
  constructor(private readonly db: Db) {}

  async create(idHash: string, session: SessionRecord): Promise<void> {
    await this.db
      .insertInto("sessions")
      .values({ id_hash: idHash, user_id: session.userId, csrf_token: session.csrfToken, created_at: session.createdAt, expires_at: session.expiresAt })
      .execute();
  }

  /** The live session with this hash; an expired one is deleted and not returned. */
  async find(idHash: string, now = Date.now()): Promise<SessionRecord | undefined> {
    const r = await this.db.selectFrom("sessions").select(["user_id", "csrf_token", "created_at", "expires_at"]).where("id_hash", "=", idHash).executeTakeFirst();
    if (!r) return undefined;
    if (r.expires_at <= now) {
      await this.delete(idHash);
      return undefined;
    }
    return { userId: r.user_id, csrfToken: r.csrf_token, createdAt: r.created_at, expiresAt: r.expires_at };
  }

  /** Deletes every expired session (sessions nobody signed out of). */
  async deleteExpired(now = Date.now()): Promise<void> {
    await this.db.deleteFrom("sessions").where("expires_at", "<=", now).execute();
  }

  async delete(idHash: string): Promise<void> {
    await this.db.deleteFrom("sessions").where("id_hash", "=", idHash).execute();
  }

  /** Ends every session of a user but `keep` (after a password change); returns the ended sessions' hashes. */
  async deleteForUser(userId: string, keep?: string): Promise<string[]> {
    const rows = await this.db
      .deleteFrom("sessions")
      .where("user_id", "=", userId)
      .where("id_hash", "!=", keep ?? "")
      .returning("id_hash")
      .execute();
    return rows.map((r) => r.id_hash);
  }
}
