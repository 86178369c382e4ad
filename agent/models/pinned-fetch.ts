import type { LookupAddress } from "node:dns";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { Readable } from "node:stream";

/**
 * A GET of `url` that connects only to `addresses` (the ones a check just passed), whatever the host's name
 * resolves to by the time the connection is made: a name cannot pass the check with a public address and then
 * lead the connection somewhere else (DNS rebinding). TLS is still checked against the URL's host name. No
 * redirect is followed; the answer comes as a fetch `Response`, its body streamed.
 */
export function pinnedFetch(url: URL, addresses: string[], init: { headers: Record<string, string>; signal?: AbortSignal }): Promise<Response> {
  const pinned: LookupAddress[] = addresses.map((address) => ({ address, family: isIP(address) === 6 ? 6 : 4 }));
  const lookup: LookupFunction = (_hostname, options, callback) => {
    if (options.all) return (callback as unknown as (err: null, all: LookupAddress[]) => void)(null, pinned);
    callback(null, pinned[0]!.address, pinned[0]!.family);
  };
  const request = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "GET", headers: init.headers, lookup, signal: init.signal }, (res) => {
      const headers = new Headers();
      for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
      const status = res.statusCode ?? 502;
      const empty = status === 204 || status === 304;
      if (empty) res.resume();
      resolve(new Response(empty ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), { status, statusText: res.statusMessage, headers }));
    });
    req.on("error", reject);
    req.end();
  });
}
