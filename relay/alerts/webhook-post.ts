import { checkedFetch } from "../outbound/checked-fetch.js";
import type { OutboundReach } from "../outbound/checked-lookup.js";
import { outboundUrlProblem } from "../outbound/outbound-url.js";

/** What sending a webhook may reach (`allowPrivate`: `MAKINA_ALERTS_ALLOW_PRIVATE=1`). */
export type WebhookReach = OutboundReach;

/** Why a webhook URL cannot be sent to, or null when it can (as far as can be told before its host is resolved). */
export function webhookUrlProblem(text: string, reach: WebhookReach): string | null {
  return outboundUrlProblem(text, reach, { example: "https://hooks.example.com/makina", setting: "MAKINA_ALERTS_ALLOW_PRIVATE" });
}

/**
 * POSTs a webhook's body through {@link checkedFetch} (public addresses only, checked as the connection is made;
 * no redirect followed: a 3xx is a failed try; a deadline for the whole answer). Resolves with the answer's
 * status; rejects, saying why, when no answer came.
 */
export async function postWebhook(url: string, body: string, headers: Record<string, string>, reach: WebhookReach, timeoutMs: number): Promise<number> {
  const problem = webhookUrlProblem(url, reach);
  if (problem) throw new Error(`the URL ${problem}`);
  const answer = await checkedFetch(reach, timeoutMs)(url, {
    method: "POST",
    headers: { "content-type": "application/json", "user-agent": "Makina-Alerts/1", "content-length": String(Buffer.byteLength(body)), ...headers },
    body,
  });
  return answer.status;
}
