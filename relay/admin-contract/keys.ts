import { z } from "zod";
import { answer, route } from "./route.js";
import { budgetField, futureTime, idList, must, nameText, orgRef, positiveInt } from "./fields.js";
import type { BudgetPeriod } from "./budgets.js";
import { listQuery, type Page } from "./list.js";
import { SERVICE_TIERS, type ServiceTier } from "../../proto/flow/service-tier.js";

/** A key's service tier: the most its requests may ask (`priority` before `default` before `flex`). */
const serviceTier = () => z.enum(SERVICE_TIERS, must(`one of ${SERVICE_TIERS.join(", ")}`));

/** An API key as admins see it: never its secret. */
export interface ApiKey {
  id: string;
  org_id: string;
  name: string | null;
  /** The key's first characters, for telling keys apart (`mk_live_AbCd`). */
  prefix: string;
  /** Stacks it is limited to; null: any. */
  stack_ids: string[] | null;
  /** Machines it is limited to; null: any. */
  machine_ids: string[] | null;
  /** Its own limits; null: the organization's default, if any. */
  rpm: number | null;
  tpm: number | null;
  /**
   * `blocked`: an admin blocked it (`blocked_at`), refused until unblocked; `expired`: active, but past its
   * `expires_at`, so refused as a revoked key is.
   */
  state: "active" | "revoked" | "blocked" | "expired";
  created_at: number;
  revoked_at: number | null;
  last_used_at: number | null;
  /** The user who made it; null when made with the admin token. */
  created_by: string | null;
  /** When it stops working (ms since the epoch); null: never. */
  expires_at: number | null;
  /** Since when it is blocked; null: it is not. */
  blocked_at: number | null;
  /**
   * The most its requests may ask of the service tiers (`priority`, `default`, `flex`): a request that asks none
   * (or `auto`) is served at it, one that asks more is refused 403.
   */
  service_tier: ServiceTier;
  /** Its token budget per calendar period (UTC), counting prompt and completion tokens; null: none. */
  budget: { tokens: number; period: BudgetPeriod } | null;
  /** Tokens its budget has used this period (and reserved by requests in flight), every relay's; null without a budget. */
  budget_spent: number | null;
  /** When its secret was last made again; null: never. */
  regenerated_at: number | null;
  /** Until when its old secret (the one before `regenerated_at`) still works; null: there is none. */
  old_secret_until: number | null;
}

/** A key in the organization's list, with what it served in the last 24 hours. */
export interface ApiKeyWithUsage extends ApiKey {
  requests_24h: number;
  tokens_24h: number;
}

/** A key just made: the secret is in this answer only. */
export interface NewApiKey extends ApiKey {
  key: string;
}

/** What the keys' list sorts by. */
export const KEY_SORTS = ["name", "state", "created_at", "last_used_at", "expires_at", "requests_24h", "tokens_24h"] as const;

export const KEY_ROUTES = {
  /** The organization's keys, a page at a time: searched in names, prefixes and ids. */
  "GET /admin/v1/keys": route({ query: z.strictObject({ org: orgRef(), ...listQuery(KEY_SORTS, ["active", "revoked", "blocked", "expired"] as const) }), response: answer<Page<ApiKeyWithUsage>>() }),
  /** Makes a key, optionally limited to stacks and machines, with its own rates and service tier (members: `default` or `flex`). */
  "POST /admin/v1/keys": route({
    status: 201,
    body: z.strictObject({ org: orgRef(), name: nameText().nullish(), stacks: idList(), machines: idList(), rpm: positiveInt().nullish(), tpm: positiveInt().nullish(), expires_at: futureTime(), service_tier: serviceTier().optional(), budget: budgetField() }),
    response: answer<NewApiKey>(),
  }),
  /**
   * Changes a key (admins any, members their own): what the body names changes, what it leaves out stays. `null`
   * clears: no name, any stack or machine, the organization's default limits, no expiry. Holds from the next
   * request, on every relay.
   */
  "PATCH /admin/v1/keys/:id": route({
    body: z.strictObject({ name: nameText().nullish(), stacks: idList(), machines: idList(), rpm: positiveInt().nullish(), tpm: positiveInt().nullish(), expires_at: futureTime(), service_tier: serviceTier().optional(), budget: budgetField() }),
    response: answer<ApiKey>(),
  }),
  /** Revokes a key (admins, or the member who made it): refused from the next request on. */
  "POST /admin/v1/keys/:id/revoke": route({ response: answer<ApiKey>() }),
  /** Blocks a key (admins): refused from the next request on, its requests logged as its own, until unblocked. */
  "POST /admin/v1/keys/:id/block": route({ response: answer<ApiKey>() }),
  /** Unblocks a key (admins): served again from the next request on. */
  "POST /admin/v1/keys/:id/unblock": route({ response: answer<ApiKey>() }),
  /**
   * Gives a key a new secret (admins, or the member who made it), answered once, as a new key's is; its
   * restrictions, limits and use stay. The old secret keeps working `grace_s` seconds more (0, the default: it
   * stops now; at most 86,400, a day), then is refused, its holder told why.
   */
  "POST /admin/v1/keys/:id/regenerate": route({
    body: z.strictObject({ grace_s: z.number(must("an integer from 0 to 86400")).int(must("an integer from 0 to 86400")).min(0, must("an integer from 0 to 86400")).max(86_400, must("an integer from 0 to 86400")).default(0) }),
    response: answer<NewApiKey>(),
  }),
} as const;
