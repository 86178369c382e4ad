import { MakinaError } from "../../proto/index.js";
import type { Actor } from "../auth/index.js";
import { hashPassword } from "../keys/index.js";
import type { User } from "../store/index.js";
import { given, type ControlContext, type Given } from "./control-context.js";
import type { Policy } from "./policy.js";

const target = (u: User) => ({ kind: "user", id: u.id, name: u.login });

/**
 * The people who sign in to the web application: seen by the organization, added and offboarded by its admins.
 * Whatever changes what a user may do (disabled, re-roled, a new password, deleted) ends its sessions and live
 * event streams at once. Nobody does this to itself, and an organization keeps at least one enabled admin.
 */
export class Users {
  constructor(private readonly c: ControlContext) {}

  /** The organization's users. */
  async list(actor: Actor, orgRef: string | null | undefined): Promise<User[]> {
    return this.c.store.users.listByOrg(this.c.policy(actor).org(orgRef).id);
  }

  /** Adds a person to an organization; the login must be free. */
  async create(actor: Actor, asked: Given<{ org?: string | null; login: string; password: string; role: User["role"] }>): Promise<User> {
    const policy = this.c.policy(actor);
    policy.requireAdmin("add users");
    const input = given(asked);
    const org = policy.org(input.org);
    const taken = () => new MakinaError("conflict", `The login '${input.login}' is taken.`, { param: "login" });
    if (await this.c.store.users.findByLogin(input.login)) throw taken();
    // Checked again by the insert itself: of two requests for one login at once (on any relay), one gets it.
    const user = await this.c.store.users.create({ orgId: org.id, login: input.login, passwordHash: await hashPassword(input.password), role: input.role });
    if (!user) throw taken();
    await this.c.record(actor, { orgId: user.orgId, action: "user.created", target: target(user), detail: { role: user.role } });
    return user;
  }

  /**
   * Disables or enables a user, or changes its role (checked with the write, so two admins demoting each other
   * at once cannot both succeed). Its sessions end when what it may do changed.
   */
  async update(actor: Actor, id: string, asked: Given<{ disabled?: boolean; role?: User["role"] }>): Promise<User> {
    const policy = this.c.policy(actor);
    const before = await this.actOn(policy, id, "disable, enable or re-role users");
    const change = given(asked);
    notOneself(before, policy, change.disabled === true ? "disable" : "change the role of");
    const user = await this.c.store.users.update(before.id, change, { keepAnAdmin: true });
    if (user === "last_admin") throw lastAdmin(before);
    if (!user) throw new MakinaError("not_found", `No user '${id}'.`, { param: "id" });
    if (user.role !== before.role || user.disabledAt !== before.disabledAt) await this.c.deps.sessions.endUser(user.id);
    if (user.role !== before.role) await this.c.record(actor, { orgId: user.orgId, action: "user.role_changed", target: target(user), detail: { from: before.role, to: user.role } });
    if ((user.disabledAt === null) !== (before.disabledAt === null)) await this.c.record(actor, { orgId: user.orgId, action: user.disabledAt === null ? "user.enabled" : "user.disabled", target: target(user) });
    return user;
  }

  /**
   * Deletes a user and revokes the keys it made. The user is disabled first, so no session of it can make a key
   * while its keys are revoked, and the keys are looked for again once it is gone (one made by a request already
   * under way). Returns the user and how many keys were revoked.
   */
  async delete(actor: Actor, id: string): Promise<{ user: User; keysRevoked: number }> {
    const policy = this.c.policy(actor);
    const user = await this.actOn(policy, id, "delete users");
    notOneself(user, policy, "delete");
    const disabled = await this.c.store.users.update(id, { disabled: true }, { keepAnAdmin: true });
    if (disabled === "last_admin") throw lastAdmin(user);
    if (!disabled) throw new MakinaError("not_found", `No user '${id}'.`, { param: "id" });
    const revokeKeys = async () => {
      const keys = (await this.c.store.keys.listByOrg(user.orgId)).filter((k) => k.createdBy === id && k.state === "active");
      for (const key of keys) await this.c.store.keys.revoke(key.id);
      return keys.length;
    };
    let keysRevoked = await revokeKeys();
    if ((await this.c.store.users.delete(id)) !== true) throw new MakinaError("not_found", `No user '${id}'.`, { param: "id" });
    keysRevoked += await revokeKeys();
    if (keysRevoked > 0) this.c.events.emit({ type: "key", orgId: user.orgId, keyId: "*" });
    await this.c.deps.sessions.endUser(user.id);
    await this.c.record(actor, { orgId: user.orgId, action: "user.deleted", target: target(user), detail: { keys_revoked: keysRevoked } });
    return { user, keysRevoked };
  }

  /** Gives a user a new password and ends its sessions; not one's own (the Account page asks for the current one). */
  async resetPassword(actor: Actor, id: string, asked: Given<{ password: string }>): Promise<User> {
    const policy = this.c.policy(actor);
    const user = await this.actOn(policy, id, "reset passwords");
    const { password } = given(asked);
    if (policy.userId === user.id) throw new MakinaError("permission_denied", "Change your own password on the Account page (it asks for the current one).");
    await this.c.store.users.setPasswordHash(user.id, await hashPassword(password));
    await this.c.deps.sessions.endUser(user.id);
    await this.c.record(actor, { orgId: user.orgId, action: "user.password_reset", target: target(user) });
    return user;
  }

  /** The user with this id, if the caller may act on it (an admin of its organization, or the operator). */
  private async actOn(policy: Policy, id: string, action: string): Promise<User> {
    const user = await this.c.store.users.get(id);
    if (!user) throw new MakinaError("not_found", `No user '${id}'.`, { param: "id" });
    policy.see(user.orgId, "user", id, "id");
    policy.requireAdmin(action);
    return user;
  }
}

function notOneself(user: User, policy: Policy, verb: string): void {
  if (policy.userId === user.id) throw new MakinaError("permission_denied", `You cannot ${verb} your own account; ask another admin.`);
}

/** Refusal of a change that would leave an organization without an enabled admin. */
function lastAdmin(user: User): MakinaError {
  return new MakinaError("conflict", `'${user.login}' is the organization's only enabled admin: make another user an admin first.`, { param: "id" });
}
