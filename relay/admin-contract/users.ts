import { z } from "zod";
import { answer, route } from "./route.js";
import { filled, must, orgRef, requiredText, says } from "./fields.js";
import { listQuery, type Page } from "./list.js";

/** Roles: admins manage the organization; members see it and manage their own keys. */
export type Role = "admin" | "member";

/** A person who signs in to the web application. */
export interface User {
  id: string;
  org_id: string;
  login: string;
  role: Role;
  created_at: number;
  /** When an admin disabled the user (it cannot sign in, and the keys it made answer 401); null while enabled. */
  disabled_at: number | null;
}

/** What deleting a user did. */
export interface DeletedUser {
  id: string;
  deleted: true;
  /** The user's keys, revoked with it. */
  keys_revoked: number;
}

/** Fewest characters of a password. */
export const MIN_PASSWORD_LENGTH = 10;

/** A new password: 10 to 1024 characters. `missing` is what one not given is told. */
export const newPassword = (missing: string) =>
  filled(missing)
    .refine((p) => p.length >= MIN_PASSWORD_LENGTH, says(`The password must have at least ${MIN_PASSWORD_LENGTH} characters.`))
    .refine((p) => p.length <= 1024, says("The password must have at most 1024 characters."));

/** What the people's list sorts by. */
export const USER_SORTS = ["login", "role", "created_at"] as const;

export const USER_ROUTES = {
  /** The organization's people, a page at a time: searched in logins and ids. */
  "GET /admin/v1/users": route({ query: z.strictObject({ org: orgRef(), ...listQuery(USER_SORTS, ["active", "disabled"]) }), response: answer<Page<User>>() }),
  /** Adds a person to an organization (admins). */
  "POST /admin/v1/users": route({
    status: 201,
    body: z.strictObject({
      org: orgRef(),
      /** 1 to 64 letters, digits or `. _ @ + -` (an email address works); surrounding spaces are dropped. */
      login: requiredText()
        .trim()
        .regex(/^[A-Za-z0-9._@+-]{1,64}$/, says("A login is 1 to 64 letters, digits or . _ @ + - (an email address works).")),
      /** Absent, null or empty: `member`. */
      role: z
        .union([z.literal(""), z.enum(["admin", "member"])], must("'admin' or 'member'"))
        .nullish()
        .transform((r): Role => r || "member"),
      password: newPassword("Enter a new password."),
    }),
    response: answer<User>(),
  }),
  /**
   * Disables or enables a user, or changes its role (admins). Each ends the user's sessions and live event
   * streams at once; a disabled user cannot sign in and its keys answer 401 until it is enabled again. An admin
   * cannot do this to itself, and an organization keeps at least one enabled admin.
   */
  "PATCH /admin/v1/users/:id": route({
    body: z
      .strictObject({
        disabled: z.boolean(must("true or false")).optional(),
        role: z.enum(["admin", "member"], must("'admin' or 'member'")).optional(),
      })
      .refine((b) => b.disabled !== undefined || b.role !== undefined, says("Give 'disabled', 'role' or both.")),
    response: answer<User>(),
  }),
  /** Deletes a user (admins): its sessions and event streams end, and its keys are revoked. The same rules as disabling. */
  "DELETE /admin/v1/users/:id": route({ response: answer<DeletedUser>() }),
  /** Gives a user a new password (admins); its sessions and event streams end. The new password is the admin's to pass on. */
  "POST /admin/v1/users/:id/reset-password": route({
    body: z.strictObject({ password: newPassword("Enter a new password.") }),
    response: answer<User>(),
  }),
} as const;
