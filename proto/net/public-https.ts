import { lookup as dnsLookup } from "node:dns/promises";
import { request } from "node:https";
import type { LookupAddress } from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import { addressClass } from "./address-class.js";

/** Resolves a host name to its addresses (injectable for tests). */
export type ResolveHost = (host: string) => Promise<string[]>;

export const resolveHost: ResolveHost = async (host) => (await dnsLookup(host, { all: true, verbatim: true })).map((a) => a.address);

/**
 * Answers a socket's lookup with `addresses` (already resolved and checked): the first one, or all of them when
 * the socket asks for all (happy eyeballs). The socket then connects to these and to no other.
 */
export function answerLookup(addresses: readonly string[], options: { all?: boolean }, callback: Parameters<LookupFunction>[2]): void {
  const all: LookupAddress[] = addresses.map((address) => ({ address, family: isIP(address) === 6 ? 6 : 4 }));
  if (options.all) return (callback as unknown as (err: null, all: LookupAddress[]) => void)(null, all);
  callback(null, all[0]!.address, all[0]!.family);
}

/** Options of {@link getPublicHttps}. */
export interface PublicHttpsOptions {
  /** The bytes asked for: `[first, last]`, inclusive (what is read is cut to it); absent: the whole body. */
  range?: [number, number];
  /** Without a range, the largest body read: a larger one is refused. */
  maxBytes?: number;
  signal: AbortSignal;
  resolve?: ResolveHost;
  /** Which addresses may be connected to. @default every address is `public` ({@link addressClass}) */
  allowed?: (address: string) => boolean;
  /** Which host names may be asked, at every hop (an operator's list). @default any */
  hostAllowed?: (host: string) => boolean;
  /** Certificate authorities to trust instead of Node's (tests). */
  ca?: Buffer;
  /** Redirects followed at most. @default 5 */
  maxRedirects?: number;
}

/**
 * GETs a byte range of an `https` URL on the relay's behalf for a member, so that the URL cannot make the
 * relay reach this machine, its network or a cloud's metadata service:
 * - only `https` (a redirect to anything else is refused);
 * - the host's addresses are checked as the connection is made (the check is the lookup the socket uses, so a
 *   name that resolves differently a moment later changes nothing): every one must be public;
 * - redirects are followed here, at most 5, each checked the same way;
 * - at most the range's length is read, or without a range `maxBytes` (more is refused).
 * Throws, saying why, otherwise. Used by the relay (GGUF headers of URLs members give) and the agent (images).
 */
export async function getPublicHttps(start: string, o: PublicHttpsOptions): Promise<{ body: Buffer; contentType: string }> {
  const resolve = o.resolve ?? resolveHost;
  const allowed = o.allowed ?? ((a: string) => addressClass(a) === "public");
  const lookup: LookupFunction = (hostname, options, callback) => {
    resolve(hostname).then(
      (addresses) => {
        const refused = addresses.find((a) => !allowed(a));
        if (addresses.length === 0 || refused !== undefined) return callback(new Error(`${hostname} resolves to ${refused ?? "nothing"}, not a public address`), "", 4);
        answerLookup(addresses, options, callback);
      },
      (err: Error) => callback(err, "", 4),
    );
  };
  const maxBytes = o.range ? o.range[1] - o.range[0] + 1 : (o.maxBytes ?? 16 * 1024 * 1024);
  let url = new URL(start);
  for (let hop = 0; ; hop++) {
    if (url.protocol !== "https:") throw new Error(`${url.href} is not https`);
    const host = url.hostname.replace(/^\[|\]$/g, "");
    if (o.hostAllowed && !o.hostAllowed(host)) throw new Error(`${host} is not an allowed host`);
    if (isIP(host) && !allowed(host)) throw new Error(`${host} is not a public address`);
    const answer = await new Promise<{ status: number; location?: string; body: Buffer; contentType: string; tooLarge: boolean }>((resolveAnswer, reject) => {
      const headers = { accept: "*/*", ...(o.range ? { range: `bytes=${o.range[0]}-${o.range[1]}` } : {}) };
      const req = request(url, { method: "GET", headers, lookup, ca: o.ca, signal: o.signal }, (res) => {
        const status = res.statusCode ?? 0;
        const contentType = String(res.headers["content-type"] ?? "");
        if (status >= 300 && status < 400) {
          res.resume();
          return resolveAnswer({ status, location: res.headers.location, body: Buffer.alloc(0), contentType, tooLarge: false });
        }
        const chunks: Buffer[] = [];
        let size = 0;
        let tooLarge = Number(res.headers["content-length"] ?? 0) > maxBytes && !o.range;
        let cut = tooLarge;
        if (cut) res.destroy();
        res.on("data", (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          // A server that sends more than was asked for is not read further.
          // A range is cut at its end; a whole body may be as large as the limit, not a byte more.
          if (!cut && (o.range ? size >= maxBytes : size > maxBytes)) {
            tooLarge = size > maxBytes;
            cut = true;
            res.destroy();
          }
        });
        // A body that ended short of what its server sent (the connection cut) is no answer: only a whole one, or
        // one this side cut at its limit, is.
        res.on("close", () => {
          if (!res.complete && !cut) return reject(new Error(`${url.href} closed the connection before the whole answer`));
          resolveAnswer({ status, body: Buffer.concat(chunks).subarray(0, maxBytes), contentType, tooLarge });
        });
        res.on("error", () => undefined);
      });
      req.on("error", reject);
      req.end();
    });
    if (answer.location === undefined) {
      if (answer.status !== 200 && answer.status !== 206) throw new Error(`${url.href} answered ${answer.status}`);
      if (answer.tooLarge && !o.range) throw new Error(`${url.href} is larger than ${maxBytes} bytes`);
      return { body: answer.body, contentType: answer.contentType };
    }
    if (hop >= (o.maxRedirects ?? 5)) throw new Error(`more than ${o.maxRedirects ?? 5} redirects`);
    url = new URL(answer.location, url);
  }
}
