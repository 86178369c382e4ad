import { z } from "zod";
import { answer, route } from "./route.js";
import { budgetField, nameText, positiveInt } from "./fields.js";
import type { BudgetPeriod } from "../limits/token-budget.js";
import type { List } from "./list.js";

/** An organization: the owner of machines, stacks and keys. */
export interface Org {
  id: string;
  name: string;
  slug: string;
  /** Requests per minute for the organization's keys that set no limit of their own; null: none. */
  default_key_rpm: number | null;
  /** Tokens per minute, likewise. */
  default_key_tpm: number | null;
  created_at: number;
  /** Tokens all its keys together may use per calendar period (UTC); null: no budget. */
  budget: { tokens: number; period: BudgetPeriod } | null;
  /** Tokens its budget has used this period (and reserved by requests in flight); null without a budget. */
  budget_spent: number | null;
}

/** A default key limit: a positive integer, null for none, or left out to keep it. */
const defaultLimit = () => positiveInt("a positive integer, or null for none").nullable().optional();

export const ORG_ROUTES = {
  /** The organizations the caller sees: every one for the operator, its own for a user. */
  "GET /admin/v1/orgs": route({ response: answer<List<Org>>() }),
  /** Creates an organization (the operator only); its slug comes from its name. */
  "POST /admin/v1/orgs": route({ status: 201, body: z.strictObject({ name: nameText() }), response: answer<Org>() }),
  /**
   * Sets the limits of the organization's keys that set none of their own, and its token budget (admins); from the
   * next request on.
   */
  "PATCH /admin/v1/orgs/:org": route({
    body: z.strictObject({ default_key_rpm: defaultLimit(), default_key_tpm: defaultLimit(), budget: budgetField() }),
    response: answer<Org>(),
  }),
} as const;
