import { z } from "zod";
import { answer, route } from "./route.js";
import { filled } from "./fields.js";
import { newPassword, type Role } from "./users.js";

/** The signed-in user, its organization, and the CSRF token every state-changing call must send in `X-CSRF-Token`. */
export interface SessionInfo {
  user: { id: string; login: string; role: Role };
  org: { id: string; name: string; slug: string };
  csrf_token: string;
}

/** Sign-in for the web application (`/auth/v1`): the session lives in an HttpOnly cookie. */
export const SESSION_ROUTES = {
  /** Signs in; sets the session cookie. Failed sign-ins are throttled per login and per address. */
  "POST /auth/v1/sign-in": route({ body: z.strictObject({ login: filled("Enter your login."), password: filled("Enter your password.") }), response: answer<SessionInfo>() }),
  /** The current session (401 when none). */
  "GET /auth/v1/session": route({ response: answer<SessionInfo>() }),
  "POST /auth/v1/sign-out": route({ response: answer<{ signed_out: true }>() }),
  /**
   * The organizations' single sign-on buttons, for the sign-in page (anyone): each `{org, label}`, where
   * `/auth/v1/sso/{org}/start` begins the sign-in.
   */
  "GET /auth/v1/sso": route({ response: answer<{ object: "list"; data: { org: string; label: string }[] }>() }),
  /** Changes the signed-in user's password; its other sessions end. */
  "POST /auth/v1/password": route({
    body: z.strictObject({ current_password: filled("Enter your current password."), new_password: newPassword("Enter a new password.") }),
    response: answer<{ changed: true }>(),
  }),
} as const;
