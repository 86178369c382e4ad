import type { IncomingHttpHeaders } from "node:http";

/** A gateway request's key as an `Authorization` value: `x-api-key` (as Anthropic's clients send it) or the bearer token. */
export function apiKeyAuthorization(headers: IncomingHttpHeaders): string | undefined {
  const key = headers["x-api-key"];
  return typeof key === "string" && key !== "" ? `Bearer ${key}` : headers.authorization;
}
