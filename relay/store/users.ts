import type { Db } from "./open-database.js";
import type { Row } from "./tables.js";
import type { ChangeNotices } from "./change-notices.js";
import { transaction } from "./transaction.js";
import { newId } from "../ids/index.js";

/** A person who signs in to the web application. */
export interface User {
  id: string;
  orgId: string;
  login: string;
  role: "admin" | "member";
  createdAt: number;
  /** When an admin disabled the user (it cannot sign in, its keys do not work); null while enabled. */
  disabledAt: number | null;
}

const PUBLIC = ["id", "org_id", "login", "role", "created_at", "disabled_at"] as const;

const toUser = (r: Pick<Row<"users">, (typeof PUBLIC)[number]>): User => ({ id: r.id, orgId: r.org_id, login: r.login, role: r.role, createdAt: r.created_at, disabledAt: r.disabled_at });

/**
 * Users of the web application (passwords as scrypt hashes only). A change to what a user may do (disabled or
 * enabled, its role, its password, deleted) is announced ({@link ChangeNotices}) before the call returns: the
 * gateway drops a disabled user's keys, and every relay ends the user's event streams.
 */
export class UserStore {
  constructor(
    private readonly db: Db,
    private readonly notices: ChangeNotices,
  ) {}

  /** Adds a user; null when the login is taken (by the database's unique index: of two at once, one gets it). */
  async create(input: { orgId: string; login: string; passwordHash: string; role: User["role"] }, now = Date.now()): Promise<User | null> {
    const user: User = { id: newId("user"), orgId: input.orgId, login: input.login, role: input.role, createdAt: now, disabledAt: null };
    const res = await this.db
      .insertInto("users")
      .values({ id: user.id, org_id: user.orgId, login: user.login, password_hash: input.passwordHash, role: user.role, created_at: now, disabled_at: null })
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

  /** The ids of every disabled user: the gateway's directory does not serve their keys. */
  async disabledIds(): Promise<string[]> {
    return (await this.db.selectFrom("users").select("id").where("disabled_at", "is not", null).execute()).map((r) => r.id);
  }

  /** The enabled admins of an organization. */
  async enabledAdmins(orgId: string): Promise<User[]> {
    return (await this.listByOrg(orgId)).filter((u) => u.role === "admin" && u.disabledAt === null);
  }

  async setPasswordHash(id: string, passwordHash: string): Promise<void> {
    await this.notices.after({ kind: "user", userId: id }, () => this.db.updateTable("users").set({ password_hash: passwordHash }).where("id", "=", id).execute());
  }

  /** Disables (with the time) or enables (null) a user; the time of an earlier disabling is kept. Returns the user, undefined when there is none. */
  async setDisabled(id: string, disabled: boolean, now = Date.now()): Promise<User | undefined> {
    await this.notices.after({ kind: "user", userId: id }, () =>
      this.db
        .updateTable("users")
        .set((eb) => ({ disabled_at: disabled ? eb.fn.coalesce("disabled_at", eb.val(now)) : null }))
        .where("id", "=", id)
        .execute(),
    );
    return this.get(id);
  }

  async setRole(id: string, role: User["role"]): Promise<User | undefined> {
    await this.notices.after({ kind: "user", userId: id }, () => this.db.updateTable("users").set({ role }).where("id", "=", id).execute());
    return this.get(id);
  }

  /** Deletes a user with its sessions; true when there was one. */
  async delete(id: string): Promise<boolean> {
    return this.notices.after({ kind: "user", userId: id }, () =>
      transaction(this.db, async (trx) => {
        await trx.deleteFrom("sessions").where("user_id", "=", id).execute();
        const res = await trx.deleteFrom("users").where("id", "=", id).executeTakeFirst();
        return Number(res.numDeletedRows) === 1;
      }),
    );
  }

  /** The user and its password hash, for sign-in. */
  async findByLogin(login: string): Promise<(User & { passwordHash: string }) | undefined> {
    const r = await this.db.selectFrom("users").selectAll().where("login", "=", login).executeTakeFirst();
    return r && { ...toUser(r), passwordHash: r.password_hash };
  }
}
