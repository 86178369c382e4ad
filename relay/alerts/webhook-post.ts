import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import { addressClass } from "../../proto/index.js";
import { checkedLookup, type OutboundReach } from "../outbound/checked-lookup.js";

/** What sending a webhook may reach (`allowPrivate`: `MAKINA_ALERTS_ALLOW_PRIVATE=1`). */
export type WebhookReach = OutboundReach;

/** Why a webhook URL cannot be sent to, or null when it can (as far as can be told before its host is resolved). */
export function webhookUrlProblem(text: string, reach: WebhookReach): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "must be an absolute URL, such as https://hooks.example.com/makina";
  }
  if (url.protocol !== "https:" && !(reach.allowPrivate && url.protocol === "http:")) return "must be an https URL (plain http only where the operator allows private receivers: MAKINA_ALERTS_ALLOW_PRIVATE=1)";
  if (url.username || url.password) return "must not hold a user name or password: put a token in its path or query";
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host) && !reach.allowPrivate && addressClass(host) !== "public") return `names ${host}, which is not a public address (the operator may allow private receivers: MAKINA_ALERTS_ALLOW_PRIVATE=1)`;
  return null;
}

/**
 * POSTs a webhook's body, connecting only to addresses that passed the check as the connection is made (so a
 * name that resolves to a private address, now or a moment later, is refused: DNS rebinding), following no
 * redirect (a 3xx is a failed try), reading at most 64 KiB of the answer. Resolves with the answer's status;
 * rejects, saying why, when no answer came.
 */
export function postWebhook(url: string, body: string, headers: Record<string, string>, reach: WebhookReach, timeoutMs: number): Promise<number> {
  const problem = webhookUrlProblem(url, reach);
  if (problem) return Promise.reject(new Error(`the URL ${problem}`));
  const target = new URL(url);
  const lookup = checkedLookup(reach);
  const request = target.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolveStatus, reject) => {
    const req = request(
      target,
      { method: "POST", headers: { "content-type": "application/json", "user-agent": "Makina-Alerts/1", "content-length": Buffer.byteLength(body), ...headers }, lookup, agent: false, timeout: timeoutMs },
      (res) => {
        let read = 0;
        res.on("data", (chunk: Buffer) => {
          read += chunk.length;
          if (read > 64 * 1024) res.destroy();
        });
        res.on("error", () => undefined);
        res.resume();
        resolveStatus(res.statusCode ?? 0);
      },
    );
    // A deadline for the whole try (a receiver that trickles its answer a byte at a time is cut off too).
    const deadline = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs);
    req.on("close", () => clearTimeout(deadline));
    req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs / 1000} s`)));
    req.on("error", reject);
    req.end(body);
  });
}
