import type { Db } from "./open-database.js";
import type { Row } from "./tables.js";
import { newId } from "../ids/index.js";

/** A person who signs in to the web application. */
export interface User {
  id: string;
  orgId: string;
  login: string;
  role: "admin" | "member";
  createdAt: number;
}

const PUBLIC = ["id", "org_id", "login", "role", "created_at"] as const;

const toUser = (r: Pick<Row<"users">, (typeof PUBLIC)[number]>): User => ({ id: r.id, orgId: r.org_id, login: r.login, role: r.role, createdAt: r.created_at });

/** Users of the web application (passwords as scrypt hashes only). */
export class UserStore {
  constructor(private readonly db: Db) {}

  /** Adds a user; null when the login is taken (by the database's unique index: of two at once, one gets it). */
  async create(input: { orgId: string; login: string; passwordHash: string; role: User["role"] }, now = Date.now()): Promise<User | null> {
    const user: User = { id: newId("user"), orgId: input.orgId, login: input.login, role: input.role, createdAt: now };
    const res = await this.db
      .insertInto("users")
      .values({ id: user.id, org_id: user.orgId, login: user.login, password_hash: input.passwordHash, role: user.role, created_at: now })
      .onConflict((oc) => oc.column("login").doNothing())
      .executeTakeFirst();
    return Number(res.numInsertedOrUpdatedRows ?? 0) === 1 ? user : null;
  }

  async get(id: string): Promise<User | undefined> {
    const r = await this.db.selectFrom("users").select(PUBLIC).where("id", "=", id).executeTakeFirst();
    return r && toUser(r);
  }

  async listByOrg(orgId: string): Promise<User[]> {
    return (await this.db.selectFrom("users").select(PUBLIC).where("org_id", "=", orgId).orderBy("created_at").orderBy("id").execute()).map(toUser);
  }

  async setPasswordHash(id: string, passwordHash: string): Promise<void> {
    await this.db.updateTable("users").set({ password_hash: passwordHash }).where("id", "=", id).execute();
  }

  /** The user and its password hash, for sign-in. */
  async findByLogin(login: string): Promise<(User & { passwordHash: string }) | undefined> {
    const r = await this.db.selectFrom("users").selectAll().where("login", "=", login).executeTakeFirst();
    return r && { ...toUser(r), passwordHash: r.password_hash };
  }
}
