import type { UserRoute } from "../../admin-contract/index.js";
import type { Access } from "../../auth/index.js";
import type { ControlPlane } from "../../control/index.js";
import type { RouteHandlers } from "./mount-routes.js";
import { toWire } from "./to-wire.js";

/** The people who sign in to the web application: seen by the organization, added by its admins. */
export function userRoutes(control: ControlPlane): RouteHandlers<UserRoute, Access> {
  return {
    "GET /admin/v1/users": async (input, access) => toWire({ object: "list", data: await control.listUsers(access.org(input.query().org).id) }),
    "POST /admin/v1/users": async (input, access) => {
      access.requireAdmin("add users");
      const body = input.body();
      return toWire(await control.createUser(access.org(body.org).id, { login: body.login, password: body.password, role: body.role }));
    },
  };
}
