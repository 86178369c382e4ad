import type { Db } from "./open-database.js";
import { newId } from "./ids.js";

/** A person who signs in to the web application. */
export interface User {
  id: string;
  orgId: string;
  login: string;
  role: "admin" | "member";
  createdAt: number;
}

/** Users of the web application in SQLite (passwords as scrypt hashes only). */
export class UserStore {
  constructor(private readonly db: Db) {}

  create(input: { orgId: string; login: string; passwordHash: string; role: User["role"] }, now = Date.now()): User {
    const user: User = { id: newId("user"), orgId: input.orgId, login: input.login, role: input.role, createdAt: now };
    this.db
      .prepare("INSERT INTO users (id, org_id, login, password_hash, role, created_at) VALUES (?, ?, ?, ?, ?, ?)")
      .run(user.id, user.orgId, user.login, input.passwordHash, user.role, now);
    return user;
  }

  /** The user and its password hash, for sign-in. */
  findByLogin(login: string): (User & { passwordHash: string }) | undefined {
    const r = this.db.prepare("SELECT * FROM users WHERE login = ?").get(login) as
      | { id: string; org_id: string; login: string; role: User["role"]; password_hash: string; created_at: number }
      | undefined;
    return r && { id: r.id, orgId: r.org_id, login: r.login, role: r.role, passwordHash: r.password_hash, createdAt: r.created_at };
  }
}
