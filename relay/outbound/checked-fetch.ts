import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import { addressClass } from "../../proto/index.js";
import { checkedLookup, type OutboundReach } from "./checked-lookup.js";

/** The largest answer read (a provider's discovery document, its keys, a token response). */
const MAX_ANSWER_BYTES = 1024 * 1024;

/**
 * A `fetch` for the relay's calls to a server an admin named (an identity provider): `https` only and public
 * addresses only (both lifted by `allowPrivate`), checked as the connection is made; no redirect followed (the
 * caller sees the 3xx); at most 1 MiB read; 10 s for the whole answer.
 */
export function checkedFetch(reach: OutboundReach, timeoutMs = 10_000) {
  const lookup = checkedLookup(reach);
  return (url: string, init: { method?: string; headers?: Record<string, string>; body?: unknown; signal?: AbortSignal | null }): Promise<Response> => {
    const target = new URL(url);
    if (target.protocol !== "https:" && !(reach.allowPrivate && target.protocol === "http:")) return Promise.reject(new Error(`${target.origin} is not https`));
    // An address written in the URL is never looked up, so it is checked here.
    const host = target.hostname.replace(/^\[|\]$/g, "");
    if (isIP(host) && !reach.allowPrivate && addressClass(host) !== "public") return Promise.reject(new Error(`${host} is not a public address`));
    const body = init.body === undefined || init.body === null ? undefined : init.body instanceof URLSearchParams ? init.body.toString() : typeof init.body === "string" ? init.body : Buffer.from(init.body as ArrayBuffer);
    const request = target.protocol === "https:" ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = request(target, { method: init.method ?? "GET", headers: init.headers, lookup, agent: false, timeout: timeoutMs, signal: init.signal ?? undefined }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (c: Buffer) => {
          size += c.length;
          if (size > MAX_ANSWER_BYTES) return res.destroy(new Error(`${target.host} answered more than 1 MiB`));
          chunks.push(c);
        });
        res.on("error", reject);
        res.on("end", () => {
          // A status or header a fetch Response cannot hold (a server answering 600) is a failed call, never a throw here.
          try {
            const headers = new Headers();
            for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
            const status = res.statusCode ?? 0;
            if (status < 200 || status > 599) throw new Error(`${target.host} answered with status ${status}`);
            resolve(new Response([204, 205, 304].includes(status) ? null : Buffer.concat(chunks), { status, headers }));
          } catch (err) {
            reject(err instanceof Error ? err : new Error(String(err)));
          }
        });
      });
      const deadline = setTimeout(() => req.destroy(new Error(`${target.host} did not answer within ${timeoutMs / 1000} s`)), timeoutMs);
      req.on("close", () => clearTimeout(deadline));
      req.on("timeout", () => req.destroy(new Error(`${target.host} did not answer within ${timeoutMs / 1000} s`)));
      req.on("error", reject);
      req.end(body);
    });
  };
}
