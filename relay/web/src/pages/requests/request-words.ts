import type { AdminCheckedQuery, LoggedRequest } from "../../api/types.js";

/** What ended a gateway request, in words, by its error code (the gateway's codes; another is shown as it is). */
const ENDINGS: Record<string, string> = {
  missing_api_key: "No API key sent",
  invalid_api_key: "Key refused (unknown, revoked or expired)",
  model_access_denied: "Key may not use this model",
  model_not_found: "No such model",
  rate_limit_requests: "Over the key's requests per minute",
  rate_limit_tokens: "Over the key's tokens per minute",
  machine_offline: "Machine offline",
  runtime_unavailable: "Runtime not ready",
  invalid_json: "Body is not JSON",
  unsupported_media_type: "Body is not JSON",
  missing_required_parameter: "A required parameter is missing",
  invalid_value: "A parameter has a wrong value",
  unknown_parameter: "Unknown parameter",
  unsupported_parameter: "Parameter not supported by this stack",
  context_length_exceeded: "Longer than the model's context",
  request_too_large: "Body too large",
  bad_request: "Bad request",
  request_timeout: "Client sent too slowly",
  stream_incomplete: "Stream ended early",
  canceled: "Client went away",
  timeout: "Took too long",
  too_many_streams: "Too many at once",
  permission_denied: "Tier above the key's",
  storage_unavailable: "Database unavailable",
  limits_unavailable: "Shared limits unavailable",
  internal_error: "Relay error",
};

/** How a request ended: `ok`, refused by the client's side (`refused`: 4xx) or failed on ours (`failed`). */
export function outcomeOf(r: Pick<LoggedRequest, "status" | "error_code">): "ok" | "refused" | "failed" {
  if (r.status < 400 && r.error_code === null) return "ok";
  return r.status >= 400 && r.status < 500 && r.error_code !== "canceled" ? "refused" : "failed";
}

/** A request's ending as a badge's state (its colour): good, wait, bad. */
export const OUTCOME_BADGE = { ok: "ok", refused: "warn", failed: "failed" } as const;

/** The ending's words: "OK", or what refused or failed it. */
export function endingText(r: Pick<LoggedRequest, "status" | "error_code">): string {
  if (r.error_code === null) return r.status < 400 ? "OK" : `HTTP ${r.status}`;
  return ENDINGS[r.error_code] ?? r.error_code.replaceAll("_", " ");
}

/** A duration in ms as people read it: `840 ms`, `2.4 s`, `1 min 5 s`. */
export function msText(ms: number | null): string {
  if (ms === null) return "—";
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** The log's status filter, in words (the relay's `status` values). */
export const STATUS_FILTERS = [
  ["ok", "Succeeded"],
  ["error", "Refused or failed"],
  ["4xx", "Refused (4xx)"],
  ["5xx", "Failed (5xx)"],
  ["401", "Key refused (401)"],
  ["403", "Not allowed (403)"],
  ["404", "No such model (404)"],
  ["429", "Rate limited (429)"],
] as const;
export type StatusFilter = (typeof STATUS_FILTERS)[number][0];

/** Each API the log names, in words (the Anthropic ones said so). */
export const API_WORDS = {
  "chat/completions": "Chat completions",
  embeddings: "Embeddings",
  responses: "Responses",
  messages: "Messages (Anthropic)",
  "messages/count_tokens": "Token count (Anthropic)",
  rerank: "Rerank",
} as const satisfies Record<NonNullable<AdminCheckedQuery<"GET /admin/v1/requests">["api"]>, string>;

/** A request's API in words; a dash for one logged before the API was kept. */
export function apiText(api: string): string {
  return (API_WORDS as Record<string, string>)[api] ?? (api || "—");
}

/** The service tiers, in words (the relay's `service_tier` values). */
export const TIER_WORDS = {
  priority: "Priority",
  default: "Default",
  flex: "Flex",
} as const satisfies Record<NonNullable<AdminCheckedQuery<"GET /admin/v1/requests">["service_tier"]>, string>;

/** The tier a request was served at, in words; empty for one refused before it had one. */
export function tierText(tier: string): string {
  return (TIER_WORDS as Record<string, string>)[tier] ?? tier;
}
