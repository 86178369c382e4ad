import { MakinaError, TIER_RANK, type ServiceTier } from "../../proto/index.js";

/**
 * The service tier a request asks, in its API's words: a tier, `auto` (its key's), or the Messages API's
 * `standard_only` (its key's, but never `priority`).
 */
export type AskedTier = ServiceTier | "auto" | "standard_only";

/**
 * The tier a request is served at: the one it asks, at most its key's (asking more is 403 `permission_denied`,
 * naming `service_tier`); `auto` or nothing: the key's.
 */
export function servedTier(asked: AskedTier | undefined, keyTier: ServiceTier): ServiceTier {
  if (asked === undefined || asked === "auto") return keyTier;
  if (asked === "standard_only") return keyTier === "priority" ? "default" : keyTier;
  if (TIER_RANK[asked] < TIER_RANK[keyTier]) {
    throw new MakinaError("permission_denied", `This API key may ask for the '${keyTier}' service tier at most, not '${asked}'. Ask an admin of the organization for a higher tier, or send 'auto'.`, { param: "service_tier" });
  }
  return asked;
}
