import type { Db } from "./open-database.js";
import { newId } from "../ids/index.js";

/** A person who signs in to the web application. */
export interface User {
  id: string;
  orgId: string;
  login: string;
  role: "admin" | "member";
  createdAt: number;
}

interface UserRow {
  id: string;
  org_id: string;
  login: string;
  role: User["role"];
  created_at: number;
}

const toUser = (r: UserRow): User => ({ id: r.id, orgId: r.org_id, login: r.login, role: r.role, createdAt: r.created_at });

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

  get(id: string): User | undefined {
    const r = this.db.prepare("SELECT id, org_id, login, role, created_at FROM users WHERE id = ?").get(id) as UserRow | undefined;
    return r && toUser(r);
  }

  listByOrg(orgId: string): User[] {
    return (this.db.prepare("SELECT id, org_id, login, role, created_at FROM users WHERE org_id = ? ORDER BY created_at, id").all(orgId) as UserRow[]).map(toUser);
  }

  setPasswordHash(id: string, passwordHash: string): void {
    this.db.prepare("UPDATE users SET password_hash = ? WHERE id = ?").run(passwordHash, id);
  }

  /** The user and its password hash, for sign-in. */
  findByLogin(login: string): (User & { passwordHash: string }) | undefined {
    const r = this.db.prepare("SELECT * FROM users WHERE login = ?").get(login) as
      | { id: string; org_id: string; login: string; role: User["role"]; password_hash: string; created_at: number }
      | undefined;
    return r && { id: r.id, orgId: r.org_id, login: r.login, role: r.role, passwordHash: r.password_hash, createdAt: r.created_at };
  }
}
