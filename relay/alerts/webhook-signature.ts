import { createHmac, randomBytes } from "node:crypto";

/** A new webhook signing secret, in the Standard Webhooks form: `whsec_` and 32 random bytes in base64. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

/**
 * The `webhook-signature` header of a message (Standard Webhooks): `v1,` and the base64 HMAC-SHA256 of
 * `{id}.{timestamp}.{body}`, keyed with the secret's bytes (what follows `whsec_`, base64-decoded).
 */
export function signWebhook(secret: string, id: string, timestampS: number, body: string): string {
  const key = Buffer.from(secret.startsWith("whsec_") ? secret.slice(6) : secret, "base64");
  return `v1,${createHmac("sha256", key).update(`${id}.${timestampS}.${body}`).digest("base64")}`;
}
