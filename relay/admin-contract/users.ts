import { z } from "zod";
import { answer, route } from "./route.js";
import { filled, must, orgRef, requiredText, says } from "./fields.js";
import type { List } from "./list.js";

/** Roles: admins manage the organization; members see it and manage their own keys. */
export type Role = "admin" | "member";

/** A person who signs in to the web application. */
export interface User {
  id: string;
  org_id: string;
  login: string;
  role: Role;
  created_at: number;
}

/** Fewest characters of a password. */
export const MIN_PASSWORD_LENGTH = 10;

/** A new password: 10 to 1024 characters. `missing` is what one not given is told. */
export const newPassword = (missing: string) =>
  filled(missing)
    .refine((p) => p.length >= MIN_PASSWORD_LENGTH, says(`The password must have at least ${MIN_PASSWORD_LENGTH} characters.`))
    .refine((p) => p.length <= 1024, says("The password must have at most 1024 characters."));

export const USER_ROUTES = {
  "GET /admin/v1/users": route({ query: z.object({ org: orgRef() }), response: answer<List<User>>() }),
  /** Adds a person to an organization (admins). */
  "POST /admin/v1/users": route({
    status: 201,
    body: z.object({
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
} as const;
