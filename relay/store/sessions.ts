import type { Db } from "./open-database.js";

/** A signed-in browser session, found by the hash of its cookie value. */
export interface SessionRecord {
  userId: string;
  /** Sent back by the web application in `X-CSRF-Token` on every state-changing call. */
  csrfToken: string;
  createdAt: number;
  expiresAt: number;
}

interface Row {
  user_id: string;
  csrf_token: string;
  created_at: number;
  expires_at: number;
}

/** Web sessions in SQLite; the cookie value itself is never stored. */
export class SessionStore {
  constructor(private readonly db: Db) {}

  create(idHash: string, session: SessionRecord): void {
    this.db
      .prepare("INSERT INTO sessions (id_hash, user_id, csrf_token, created_at, expires_at) VALUES (?, ?, ?, ?, ?)")
      .run(idHash, session.userId, session.csrfToken, session.createdAt, session.expiresAt);
  }

  /** The live session with this hash; an expired one is deleted and not returned. */
  find(idHash: string, now = Date.now()): SessionRecord | undefined {
    const r = this.db.prepare("SELECT user_id, csrf_token, created_at, expires_at FROM sessions WHERE id_hash = ?").get(idHash) as Row | undefined;
    if (!r) return undefined;
    if (r.expires_at <= now) {
      this.delete(idHash);
      return undefined;
    }
    return { userId: r.user_id, csrfToken: r.csrf_token, createdAt: r.created_at, expiresAt: r.expires_at };
  }

  /** Deletes every expired session (sessions nobody signed out of). */
  deleteExpired(now = Date.now()): void {
    this.db.prepare("DELETE FROM sessions WHERE expires_at <= ?").run(now);
  }

  delete(idHash: string): void {
    this.db.prepare("DELETE FROM sessions WHERE id_hash = ?").run(idHash);
  }

  /** Ends every session of a user but `keep` (after a password change). */
  deleteForUser(userId: string, keep?: string): void {
    this.db.prepare("DELETE FROM sessions WHERE user_id = ? AND id_hash != ?").run(userId, keep ?? "");
  }
}
