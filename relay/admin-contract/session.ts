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
   * What the sign-in page offers for single sign-on (anyone): the button (`{org, label}`) of the one organization
   * that has it, where a POST to `/auth/v1/sso/{org}/start` begins the sign-in; with several, none, and `ask_org`:
   * the page asks for the organization.
   */
  "GET /auth/v1/sso": route({ response: answer<{ object: "list"; data: { org: string; label: string }[]; ask_org: boolean }>() }),
  /** Changes the signed-in user's password; its other sessions end. */
  "POST /auth/v1/password": route({
    body: z.strictObject({ current_password: filled("Enter your current password."), new_password: newPassword("Enter a new password.") }),
    response: answer<{ changed: true }>(),
  }),
} as const;
