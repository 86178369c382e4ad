import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { LookupFunction } from "node:net";
import { Readable } from "node:stream";
import { answerLookup } from "../../proto/index.js";

/** Statuses whose answer has no body, as fetch's `Response` wants them. */
const NO_BODY = new Set([101, 103, 204, 205, 304]);

/** A connection that sends or receives nothing for this long is given up (the download's retries take over). */
const IDLE_TIMEOUT_MS = 300_000;

/**
 * A GET of `url` that connects only to `addresses` (the ones a check just passed), whatever the host's name
 * resolves to by the time the connection is made: a name cannot pass the check with one address and then lead
 * the connection somewhere else (DNS rebinding). Each call has a connection of its own (no pooled socket,
 * which would have been opened to whatever address an earlier request went to). TLS is still checked against
 * the URL's host name. No redirect is followed; the answer comes as a fetch `Response`, its body streamed. A
 * status fetch cannot represent, or a connection idle for 5 minutes, rejects.
 */
export function pinnedFetch(url: URL, addresses: string[], init: { headers: Record<string, string>; signal?: AbortSignal }): Promise<Response> {
  const lookup: LookupFunction = (_hostname, options, callback) => answerLookup(addresses, options, callback);
  const request = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "GET", headers: init.headers, lookup, signal: init.signal, agent: false }, (res) => {
      try {
        const status = res.statusCode ?? 0;
        if (status < 200 || status > 599) throw new Error(`${url.host} answered with status ${status}`);
        const headers = new Headers();
        for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
        if (NO_BODY.has(status)) res.resume();
        resolve(new Response(NO_BODY.has(status) ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), { status, headers }));
      } catch (err) {
        res.destroy();
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
    req.setTimeout(IDLE_TIMEOUT_MS, () => req.destroy(new Error(`${url.host} sent nothing for ${IDLE_TIMEOUT_MS / 1000} s`)));
    req.on("error", reject);
    req.end();
  });
}
