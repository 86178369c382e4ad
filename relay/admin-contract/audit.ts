import { z } from "zod";
import { answer, route } from "./route.js";
import { must, orgRef, timeParam } from "./fields.js";
import type { List } from "./list.js";

/**
 * The actions the audit log records, by what they act on. A filter names one (`user.disabled`) or a family
 * (`user`: every `user.…`).
 */
export const AUDIT_ACTIONS = [
  "sign_in",
  "user.created",
  "user.disabled",
  "user.enabled",
  "user.role_changed",
  "user.password_reset",
  "user.password_changed",
  "user.deleted",
  "key.created",
  "key.changed",
  "key.revoked",
  "key.blocked",
  "key.unblocked",
  "key.regenerated",
  "machine.created",
  "machine.revoked",
  "machine.token_rotated",
  "machine.renamed",
  "machine.deleted",
  "stack.created",
  "stack.deployed",
  "stack.undeployed",
  "stack.loaded",
  "stack.unloaded",
  "stack.changed",
  "stack.deleted",
  "org.created",
  "org.limits_changed",
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];
/** The families a filter may name for all their actions (`key` for every `key.…`). */
const AUDIT_FAMILIES = [...new Set(AUDIT_ACTIONS.filter((a) => a.includes(".")).map((a) => a.slice(0, a.indexOf("."))))];

/** One recorded action. */
export interface AuditEvent {
  id: string;
  object: "audit_event";
  /** Milliseconds since the epoch. */
  at: number;
  action: AuditAction;
  /** `failure` only for sign-ins refused; every other action is recorded once done. */
  outcome: "success" | "failure";
  /** Who: the operator (admin token), a signed-in user, someone not signed in (a sign-in), or `makina up`'s first start (bootstrap). */
  actor: { kind: "operator" | "user" | "anonymous" | "bootstrap"; id: string | null; login: string | null };
  /** The client's address as the relay saw it. */
  address: string | null;
  /** What it was done to. */
  target: { kind: string; id: string; name: string | null } | null;
  /** What changed (`{"role": "admin"}`), never a secret. */
  detail: Record<string, unknown> | null;
}

/** An audit page: the events, newest first; `next` is the `before` of the next page, null at the end. */
export type AuditPage = List<AuditEvent> & { next: string | null };

const LIMIT = must("an integer from 1 to 500");

const text = () => z.string(must("a string")).max(200, must("at most 200 characters")).optional();

/** What a read of the audit log filters by: an action or a family, who did it, to what, and when. */
const AUDIT_FILTER = {
  org: orgRef(),
  action: z
    .string(must("an action or a family of actions"))
    .refine((a) => (AUDIT_ACTIONS as readonly string[]).some((known) => known === a || known.startsWith(`${a}.`)), must(`one of ${AUDIT_ACTIONS.join(", ")}, or a family (${AUDIT_FAMILIES.join(", ")})`))
    .optional(),
  /** Who: a user's id, or words of its login (any case). */
  actor: text(),
  /** To what: a target's id (a key's, a stack's…), or words of its name. */
  target: text(),
  /** From this time on (ms since the epoch, or ISO 8601). */
  since: timeParam().optional(),
  /** Before this time. */
  until: timeParam().optional(),
};

export const AUDIT_ROUTES = {
  /**
   * An organization's audit log, newest first (admins): `limit` events (1 to 500, 100 by default) before
   * `before`, filtered by `action`, `actor`, `target`, `since` and `until`.
   */
  "GET /admin/v1/audit": route({
    query: z.strictObject({
      ...AUDIT_FILTER,
      limit: z.coerce.number(LIMIT).int(LIMIT).min(1, LIMIT).max(500, LIMIT).default(100),
      before: z.string(must("an event id")).regex(/^aud_[a-z0-9]{16}$/, must("an event id")).optional(),
    }),
    response: answer<AuditPage>(),
  }),
  /** The audit log as CSV (admins), every event the same filter takes, newest first, streamed. */
  "GET /admin/v1/audit.csv": route({ query: z.strictObject(AUDIT_FILTER), response: answer<string>() }),
} as const;
