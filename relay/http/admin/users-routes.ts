import type { UserRoute } from "../../admin-contract/index.js";
import type { Actor } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { RouteHandlers } from "./mount-routes.js";
import { toWire } from "./to-wire.js";
import { pageOf } from "./page-of.js";

/** The people who sign in to the web application (the control plane's `users`): a page of them, add, change, delete, reset a password. */
export function userRoutes(control: ControlPlane): RouteHandlers<UserRoute, Actor> {
  return {
    "GET /admin/v1/users": async (input, actor) => {
      const { org, ...ask } = input.query();
      const users = toWire(await control.users.list(actor, org));
      return pageOf(users, ask, { searched: (u) => [u.login, u.id], state: (u) => (u.disabled_at === null ? "active" : "disabled") });
    },
    "POST /admin/v1/users": async (input, actor) => {
      return toWire(await control.users.create(actor, () => input.body()));
    },
    "PATCH /admin/v1/users/:id": async (input, actor) => toWire(await control.users.update(actor, input.params.id, () => input.body())),
    "DELETE /admin/v1/users/:id": async ({ params }, actor) => {
      const { user, keysRevoked } = await control.users.delete(actor, params.id);
      return { id: user.id, deleted: true, keys_revoked: keysRevoked };
    },
    "POST /admin/v1/users/:id/reset-password": async (input, actor) => toWire(await control.users.resetPassword(actor, input.params.id, () => input.body())),
  };
}
