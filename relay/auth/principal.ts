import type { SessionUser } from "./web-sessions.js";

/**
 * Who calls the admin API: the relay's operator (the admin token: every
 * organization), or a signed-in user of one organization with its role.
 */
export type Principal = { kind: "operator" } | ({ kind: "user" } & SessionUser);
