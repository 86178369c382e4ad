/**
 * A request's service tier, in OpenAI's words: `priority` goes before `default`, `default` before `flex`. A key
 * has the most it may ask; a request asks one (or `auto`: its key's).
 */
export const SERVICE_TIERS = ["priority", "default", "flex"] as const;
export type ServiceTier = (typeof SERVICE_TIERS)[number];

/** A tier's place in the order: 0 first. */
export const TIER_RANK: Readonly<Record<ServiceTier, number>> = { priority: 0, default: 1, flex: 2 };

/** Whether a value is a tier's name. */
export function isServiceTier(value: unknown): value is ServiceTier {
  return value === "priority" || value === "default" || value === "flex";
}

/**
 * How long a request waits before it is ranked one tier higher, ms (the default of the relay's
 * `MAKINA_QUEUE_AGING_MS`, and the agent's): a `flex` request waits as a `default` one after this long, and as a
 * `priority` one after twice this, so no tier waits without a bound behind another.
 */
export const TIER_AGING_MS = 30_000;

/**
 * The most of a pool's places (a stack's requests in flight, a model's context sequences) `flex` requests hold at
 * once: three quarters, at least one. The rest is kept for `priority` and `default` requests, which then start at
 * once however many `flex` ones wait, rather than after one of them ends.
 */
export function flexPlaces(places: number): number {
  return Math.max(1, Math.floor((places * 3) / 4));
}

/** Longest id of the client a fair share is kept for (a key's id), in characters; longer ones are cut. */
export const FAIR_SHARE_KEY_MAX = 64;
