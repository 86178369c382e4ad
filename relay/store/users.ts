import type { Db } from "./open-database.js";
import type { Transaction } from "kysely";
import type { Row, Tables } from "./tables.js";
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
    private readonly dialect: "sqlite" | "postgres",
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

  async setPasswordHash(id: string, passwordHash: string): Promise<void> {
    await this.notices.after({ kind: "user", userId: id }, () => this.db.updateTable("users").set({ password_hash: passwordHash }).where("id", "=", id).execute());
  }

  /**
   * Disables (the time of an earlier disabling is kept) or enables a user and sets its role, in one transaction. With `keepAnAdmin`, refused
   * (`"last_admin"`, nothing written) when it would leave the user's organization without an enabled admin: the
   * check and the write hold the organization's row (PostgreSQL) or the database (SQLite), so two admins
   * demoting each other at once on any relays cannot both succeed. Undefined when there is no such user.
   */
  async update(id: string, change: { disabled?: boolean; role?: User["role"] }, options: { keepAnAdmin: boolean }, now = Date.now()): Promise<User | "last_admin" | undefined> {
    return this.notices.after({ kind: "user", userId: id }, () =>
      transaction(this.db, async (trx) => {
        const user = await this.guard(trx, id, options.keepAnAdmin && (change.disabled === true || change.role === "member"));
        if (user === undefined || user === "last_admin") return user;
        const role = change.role ?? user.role;
        const disabledAt = change.disabled === undefined ? user.disabledAt : change.disabled ? (user.disabledAt ?? now) : null;
        await trx.updateTable("users").set({ role, disabled_at: disabledAt }).where("id", "=", id).execute();
        return { ...user, role, disabledAt };
      }),
    );
  }

  /** Deletes a user with its sessions (and the addresses it signed in from): true when there was one; with `keepAnAdmin`, as {@link update}. */
  async delete(id: string, options: { keepAnAdmin: boolean } = { keepAnAdmin: false }): Promise<boolean | "last_admin"> {
    return this.notices.after({ kind: "user", userId: id }, () =>
      transaction(this.db, async (trx) => {
        const user = await this.guard(trx, id, options.keepAnAdmin);
        if (user === undefined) return false;
        if (user === "last_admin") return user;
        await trx.deleteFrom("sessions").where("user_id", "=", id).execute();
        await trx.deleteFrom("sign_in_addresses").where("user_id", "=", id).execute();
        const res = await trx.deleteFrom("users").where("id", "=", id).executeTakeFirst();
        return Number(res.numDeletedRows) === 1;
      }),
    );
  }

  /**
   * In a transaction: the user, after taking its organization's row for the rest of the transaction (on
   * PostgreSQL; SQLite runs one writing transaction at a time); `"last_admin"` when `losing` it would leave the
   * organization with no other enabled admin.
   */
  private async guard(trx: Transaction<Tables>, id: string, losing: boolean): Promise<User | "last_admin" | undefined> {
    const found = await trx.selectFrom("users").select(PUBLIC).where("id", "=", id).executeTakeFirst();
    if (!found) return undefined;
    const user = toUser(found);
    if (!losing || user.role !== "admin" || user.disabledAt !== null) return user;
    if (this.dialect === "postgres") await trx.selectFrom("organizations").select("id").where("id", "=", user.orgId).forUpdate().execute();
    const others = await trx
      .selectFrom("users")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("org_id", "=", user.orgId)
      .where("role", "=", "admin")
      .where("disabled_at", "is", null)
      .where("id", "!=", id)
      .executeTakeFirstOrThrow();
    return Number(others.n) === 0 ? "last_admin" : user;
  }

  /** The user and its password hash, for sign-in. */
  async findByLogin(login: string): Promise<(User & { passwordHash: string }) | undefined> {
    const r = await this.db.selectFrom("users").selectAll().where("login", "=", login).executeTakeFirst();
    return r && { ...toUser(r), passwordHash: r.password_hash };
  }
}
