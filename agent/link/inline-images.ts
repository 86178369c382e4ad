import { getPublicHttps, MakinaError, type ChatInput, type PublicHttpsOptions } from "../../proto/index.js";

/** How the agent fetches the images a request names (tests give a resolver, an address rule and a CA). */
export type ImageFetchOptions = Omit<PublicHttpsOptions, "range" | "maxBytes" | "signal"> & {
  /** Host names images may come from (a name or `*.domain`); empty: any public https host. */
  allowedDomains?: string[];
};

/** The largest image fetched, as the vendor's API takes (20 MB). */
const MAX_IMAGE_BYTES = 20 * 1024 * 1024;
/** The most bytes of images one request may have fetched, together. */
const MAX_REQUEST_IMAGE_BYTES = 32 * 1024 * 1024;
/** The most images a request may have fetched. */
const MAX_IMAGES = 16;
/** How long one image may take. */
const IMAGE_TIMEOUT_MS = 15_000;
const IMAGE_TYPES = /^image\/(png|jpeg|gif|webp)$/;

/** Whether a request names an image by URL (`data:` images are already inline). */
export function hasImageUrls(input: ChatInput): boolean {
  return input.messages.some((m) => m.parts?.some((p) => p.type === "image_url" && !p.imageUrl.startsWith("data:")));
}

/**
 * The request with every image it names by URL fetched by the agent and put inline (`data:` URLs), so that no
 * runtime (vLLM fetches what it is given, from the GPU host) ever fetches a URL a client chose. The agent
 * fetches only over https, from hosts whose every address is public, checked as each connection is made and
 * at every redirect (never this machine, its network or a cloud's metadata service), one after the other, at
 * most 20 MB of a PNG, JPEG, GIF or WebP each and 32 MB together, 16 images a request, and from
 * `allowedDomains` only (at every hop too) when the operator set them. Anything else is refused with 400
 * `invalid_value` saying why.
 */
export async function inlineImages(input: ChatInput, options: ImageFetchOptions, signal: AbortSignal): Promise<ChatInput> {
  const urls = new Set<string>();
  for (const m of input.messages) for (const p of m.parts ?? []) if (p.type === "image_url" && !p.imageUrl.startsWith("data:")) urls.add(p.imageUrl);
  if (urls.size > MAX_IMAGES) throw refused(`A request may name at most ${MAX_IMAGES} images by URL; send the others inline as data: URLs.`);
  const { allowedDomains = [], ...policy } = options;
  const hostAllowed = allowedDomains.length ? (host: string) => allowedDomains.some((d) => hostMatches(host, d)) : undefined;
  const inline = new Map<string, string>();
  // One after the other, within one budget for the request: a request of a few hundred bytes cannot make the
  // agent hold more than MAX_REQUEST_IMAGE_BYTES of images (and their base64).
  let budget = MAX_REQUEST_IMAGE_BYTES;
  for (const url of urls) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw refused(`The image URL ${short(url)} is not a URL.`);
    }
    if (parsed.protocol !== "https:") throw refused(`The image URL ${short(url)} must be https (or the image inline as a data: URL).`);
    if (hostAllowed && !hostAllowed(parsed.hostname)) throw refused(`Images may come from ${allowedDomains.join(", ")} only on this machine; ${parsed.hostname} is not one of them.`);
    const timeout = AbortSignal.timeout(IMAGE_TIMEOUT_MS);
    try {
      const { body, contentType } = await getPublicHttps(url, { ...policy, hostAllowed, maxBytes: Math.min(MAX_IMAGE_BYTES, budget), signal: AbortSignal.any([signal, timeout]) });
      budget -= body.length;
      const type = contentType.split(";")[0]!.trim().toLowerCase();
      if (!IMAGE_TYPES.test(type)) throw new Error(`it is ${type || "of no stated type"}, not a PNG, JPEG, GIF or WebP image`);
      inline.set(url, `data:${type};base64,${body.toString("base64")}`);
    } catch (err) {
      if (signal.aborted) throw MakinaError.from(signal.reason);
      throw refused(`The image at ${short(url)} could not be fetched: ${reason(err as Error)}.`);
    }
  }
  return {
    ...input,
    messages: input.messages.map((m) => (m.parts?.length ? { ...m, parts: m.parts.map((p) => (p.type === "image_url" && inline.has(p.imageUrl) ? { ...p, imageUrl: inline.get(p.imageUrl)! } : p)) } : m)),
  };
}

/** Why a fetch failed, in words that name nothing of the machine's network (no address a name resolved to). */
function reason(err: Error): string {
  const m = err.message;
  if (/not a public address|resolves to/.test(m)) return "its host is not a public address";
  if (/not an allowed host/.test(m)) return "it redirects to a host images may not come from on this machine";
  if (/ENOTFOUND|EAI_AGAIN/.test(m)) return "its host name is not known";
  if (/is not https/.test(m)) return "it redirects away from https";
  if (/larger than|answered \d+|not a PNG|redirects/.test(m)) return m.replace(/^https:\/\/\S+ /, "it ");
  if (err.name === "TimeoutError" || /aborted|timeout/i.test(m)) return `it took longer than ${IMAGE_TIMEOUT_MS / 1000} s`;
  return "its host could not be reached";
}

function hostMatches(host: string, domain: string): boolean {
  const d = domain.toLowerCase();
  return d.startsWith("*.") ? host.endsWith(d.slice(1)) : host === d;
}

function refused(message: string): MakinaError {
  return new MakinaError("invalid_value", message, { param: "messages" });
}

/** A URL as an error names it: without its query (signed links carry credentials there), cut to size. */
function short(url: string): string {
  return url.replace(/\?.*$/s, "?…").slice(0, 200);
}
