import { z } from "zod";
import { answer, route } from "./route.js";
import { budgetField, must, nameText, positiveInt } from "./fields.js";
import type { BudgetPeriod } from "./budgets.js";
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

/** An organization's single sign-on as admins see it: never its client secret. */
export interface OrgSso {
  issuer: string;
  client_id: string;
  /** Whether a client secret is kept (sealed): it is never shown. */
  has_secret: boolean;
  label: string;
  role_claim: string | null;
  admin_groups: string[];
  passwords: "everyone" | "break_glass";
  break_glass_login: string | null;
  /** What to register at the provider as the client's redirect URI. */
  redirect_uri: string;
  updated_at: number;
}

const text = (what: string, max = 2000) => z.string(must(what)).min(1, must(what)).max(max, must(`${what} of at most ${max} characters`));

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
  /** The organization's single sign-on (admins); null when none is set. */
  "GET /admin/v1/orgs/:org/sso": route({ response: answer<OrgSso | null>() }),
  /**
   * Sets the organization's OpenID provider (admins): its issuer (read now: its discovery document must answer),
   * client id and secret (needed the first time; kept sealed, never shown), the button's label, the groups claim
   * and admin groups, and whether passwords still sign in (`break_glass`: only `break_glass_login`, an admin).
   */
  "PUT /admin/v1/orgs/:org/sso": route({
    body: z.strictObject({
      issuer: text("the provider's issuer URL"),
      client_id: text("the client id", 500),
      client_secret: text("the client secret", 2000).optional(),
      label: text("the button's label", 60),
      role_claim: text("a claim's name", 100).nullish(),
      admin_groups: z.array(z.string(must("an array of group names")).max(500, must("group names of at most 500 characters")), must("an array of group names")).max(100, must("at most 100 groups")).default([]),
      passwords: z.enum(["everyone", "break_glass"], must("everyone or break_glass")).default("everyone"),
      break_glass_login: text("a login", 100).nullish(),
    }),
    response: answer<OrgSso>(),
  }),
  /** Removes the organization's single sign-on (admins): its people sign in with passwords again. */
  "DELETE /admin/v1/orgs/:org/sso": route({ response: answer<{ deleted: true }>() }),
} as const;
