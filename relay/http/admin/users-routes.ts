import type { UserRoute } from "../../admin-contract/index.js";
import type { Access, WebSessions } from "../../auth/index.js";
import type { ControlPlane, User } from "../../control/index.js";
import type { AuditRecorder } from "./audit-trail.js";
import type { RouteHandlers } from "./mount-routes.js";
import { toWire } from "./to-wire.js";
import { pageOf } from "./page-of.js";

/**
 * The people who sign in to the web application: seen by the organization, added and offboarded by its admins.
 * Whatever changes what a user may do (disabled, re-roled, a new password, deleted) ends its sessions and live
 * event streams at once.
 */
export function userRoutes(control: ControlPlane, sessions: WebSessions, record: AuditRecorder): RouteHandlers<UserRoute, Access> {
  const target = (u: User) => ({ kind: "user", id: u.id, name: u.login });
  /** The user with this id, if the caller may act on it (an admin of its organization, or the operator). */
  const actOn = async (id: string, access: Access, action: string): Promise<User> => {
    const user = await control.user(id);
    access.see(user.orgId, "user", id, "id");
    access.requireAdmin(action);
    return user;
  };
  return {
    "GET /admin/v1/users": async (input, access) => {
      const { org, ...ask } = input.query();
      const users = toWire(await control.listUsers(access.org(org).id));
      return pageOf(users, ask, { searched: (u) => [u.login, u.id], state: (u) => (u.disabled_at === null ? "active" : "disabled") });
    },
    "POST /admin/v1/users": async (input, access) => {
      access.requireAdmin("add users");
      const body = input.body();
      const user = await control.createUser(access.org(body.org).id, { login: body.login, password: body.password, role: body.role });
      await record(access, { orgId: user.orgId, action: "user.created", target: target(user), detail: { role: user.role } });
      return toWire(user);
    },
    "PATCH /admin/v1/users/:id": async (input, access) => {
      const before = await actOn(input.params.id, access, "disable, enable or re-role users");
      const body = input.body();
      const user = await control.updateUser(before, body, access.userId);
      if (user.role !== before.role || user.disabledAt !== before.disabledAt) await sessions.endUser(user.id);
      if (user.role !== before.role) await record(access, { orgId: user.orgId, action: "user.role_changed", target: target(user), detail: { from: before.role, to: user.role } });
      if ((user.disabledAt === null) !== (before.disabledAt === null)) await record(access, { orgId: user.orgId, action: user.disabledAt === null ? "user.enabled" : "user.disabled", target: target(user) });
      return toWire(user);
    },
    "DELETE /admin/v1/users/:id": async (input, access) => {
      const user = await actOn(input.params.id, access, "delete users");
      const keysRevoked = await control.deleteUser(user, access.userId);
      await sessions.endUser(user.id);
      await record(access, { orgId: user.orgId, action: "user.deleted", target: target(user), detail: { keys_revoked: keysRevoked } });
      return { id: user.id, deleted: true, keys_revoked: keysRevoked };
    },
    "POST /admin/v1/users/:id/reset-password": async (input, access) => {
      const user = await actOn(input.params.id, access, "reset passwords");
      await control.resetPassword(user, input.body().password, access.userId);
      await sessions.endUser(user.id);
      await record(access, { orgId: user.orgId, action: "user.password_reset", target: target(user) });
      return toWire(user);
    },
  };
}
