import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { addressClass, hfResolveUrl, parseHfRef } from "../../proto/index.js";
import { findCatalogModel, UNKNOWN_MODEL, type ModelFacts } from "../compatibility/index.js";

/** Reads what the compatibility rules need from a GGUF file's header at a URL. */
export type GgufHeaderReader = (url: string, signal: AbortSignal) => Promise<ModelFacts>;

/** Context size at which the KV cache per token is estimated. */
const PROBE_CONTEXT = 4096;

/**
 * node-llama-cpp reads the header (ranged requests: a few hundred KiB, never the
 * weights) and estimates the model's size and its context's memory per token.
 */
export const readGgufHeader: GgufHeaderReader = async (url, signal) => {
  const { readGgufFileInfo, GgufInsights } = await import("node-llama-cpp");
  const info = await readGgufFileInfo(url, { signal, logWarnings: false, fetchRetryOptions: { retries: 0 } });
  const insights = await GgufInsights.from(info);
  const context = insights.estimateContextResourceRequirements({ contextSize: PROBE_CONTEXT, modelGpuLayers: 0, sequences: 1 });
  return {
    weightsBytes: insights.modelSize,
    kvBytesPerToken: Math.ceil(context.cpuRam / PROBE_CONTEXT),
    trainContextSize: insights.trainContextSize ?? null,
    source: "gguf-header",
  };
};

/** Resolves a host name to its addresses (injectable for tests). */
export type ResolveHost = (host: string) => Promise<string[]>;

const resolveHost: ResolveHost = async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** Options of {@link ModelInspector}. */
export interface ModelInspectorOptions {
  readHeader?: GgufHeaderReader;
  /** Where `hf:` references resolve (the operator's choice: read whatever its address). @default https://huggingface.co */
  hubEndpoint?: string;
  /** How long one header read may take. @default 4000 */
  timeoutMs?: number;
  /** How long a failed read is remembered before it is tried again. @default 300000 */
  retryAfterMs?: number;
  /** Header reads over the network an organization may start a minute (remembered answers are free). @default 30 */
  readsPerMinute?: number;
  /** Answers remembered, the least recently asked forgotten first. @default 1000 */
  maxRemembered?: number;
  resolve?: ResolveHost;
  now?: () => number;
}

/** The longest model reference read (a URL or `hf:` reference): longer ones are refused where they are given. */
export const MAX_MODEL_REF_CHARS = 2048;
/** Redirects followed to find where a header is. */
const MAX_REDIRECTS = 5;

/**
 * What is known of a model before it is pulled: the catalog's facts, or its GGUF header read over the network
 * (remembered; a failed read is tried again only after a while). A path on a worker's disk cannot be read from
 * the relay: its facts are unknown until it is pulled.
 *
 * The relay reads on a member's behalf, so what it reads is bounded (docs/security.md):
 * - `hf:` references, from the hub the operator configured;
 * - `https://` URLs whose host resolves to public addresses only, following redirects (at most 5) only to
 *   such URLs (never to this machine, its network or a cloud's metadata service, never to plain http);
 * - at most `readsPerMinute` reads an organization starts a minute, and `maxRemembered` answers kept.
 */
export class ModelInspector {
  private readonly cache = new Map<string, { facts: ModelFacts; until: number }>();
  private readonly inFlight = new Map<string, Promise<ModelFacts>>();
  /** Reads started per organization in the current minute. */
  private readonly reads = new Map<string, { minute: number; count: number }>();
  private readonly o: Required<ModelInspectorOptions>;

  constructor(options: ModelInspectorOptions = {}) {
    this.o = {
      readHeader: readGgufHeader,
      hubEndpoint: "https://huggingface.co",
      timeoutMs: 4000,
      retryAfterMs: 300_000,
      readsPerMinute: 30,
      maxRemembered: 1000,
      resolve: resolveHost,
      now: Date.now,
      ...options,
    };
  }

  /** What is known without reading anything: the catalog, or a header read before. */
  known(ref: string): ModelFacts {
    const known = findCatalogModel(ref);
    if (known) return known.facts;
    const url = this.headerUrl(ref);
    return (url && this.cache.get(url)?.facts) || UNKNOWN_MODEL;
  }

  /** What is known, reading the header when it can be read (`orgId`: whose read it is, for the bound per minute). */
  async facts(ref: string, orgId = ""): Promise<ModelFacts> {
    const known = findCatalogModel(ref);
    if (known) return known.facts;
    const url = this.headerUrl(ref);
    if (!url) return UNKNOWN_MODEL;
    const cached = this.cache.get(url);
    if (cached && cached.until > this.o.now()) {
      // The most recently asked is forgotten last.
      this.cache.delete(url);
      this.cache.set(url, cached);
      return cached.facts;
    }
    let pending = this.inFlight.get(url);
    if (!pending) {
      if (!this.mayRead(orgId)) return UNKNOWN_MODEL;
      const signal = AbortSignal.timeout(this.o.timeoutMs);
      const direct = !ref.startsWith("hf:");
      pending = (direct ? this.allowedTarget(url, signal) : Promise.resolve(url))
        .then((target) => this.o.readHeader(target, signal))
        .then(
          (facts) => {
            this.remember(url, facts, Number.POSITIVE_INFINITY);
            return facts;
          },
          () => {
            this.remember(url, UNKNOWN_MODEL, this.o.now() + this.o.retryAfterMs);
            return UNKNOWN_MODEL;
          },
        )
        .finally(() => this.inFlight.delete(url));
      this.inFlight.set(url, pending);
    }
    return pending;
  }

  private remember(url: string, facts: ModelFacts, until: number): void {
    this.cache.delete(url);
    this.cache.set(url, { facts, until });
    while (this.cache.size > this.o.maxRemembered) this.cache.delete(this.cache.keys().next().value!);
  }

  /** Counts a read against the organization's reads of this minute; false when it has none left. */
  private mayRead(orgId: string): boolean {
    const minute = Math.floor(this.o.now() / 60_000);
    for (const [id, r] of this.reads) if (r.minute !== minute) this.reads.delete(id);
    const r = this.reads.get(orgId) ?? { minute, count: 0 };
    if (r.count >= this.o.readsPerMinute) return false;
    r.count++;
    this.reads.set(orgId, r);
    return true;
  }

  /**
   * Where a direct URL's header is, after its redirects, each checked before it is asked: https, and a host
   * whose every address is public. Throws when one is not. (node-llama-cpp then reads the last one; a server
   * that answers that URL with yet another redirect at that moment is followed by it: see docs/security.md.)
   */
  private async allowedTarget(start: string, signal: AbortSignal): Promise<string> {
    let url = new URL(start);
    for (let hop = 0; ; hop++) {
      await this.checkPublicHttps(url);
      const res = await fetch(url, { method: "GET", headers: { range: "bytes=0-0" }, redirect: "manual", signal });
      await res.body?.cancel();
      const location = res.status >= 300 && res.status < 400 ? res.headers.get("location") : null;
      if (!location) return url.href;
      if (hop >= MAX_REDIRECTS) throw new Error(`more than ${MAX_REDIRECTS} redirects`);
      url = new URL(location, url);
    }
  }

  private async checkPublicHttps(url: URL): Promise<void> {
    if (url.protocol !== "https:") throw new Error(`${url.protocol} is not https`);
    const host = url.hostname.replace(/^\[|\]$/g, "");
    const addresses = isIP(host) ? [host] : await this.o.resolve(host);
    if (addresses.length === 0 || addresses.some((a) => addressClass(a) !== "public")) throw new Error(`${host} is not a public address`);
  }

  /** The URL a GGUF reference's header can be read from, or null. */
  private headerUrl(ref: string): string | null {
    if (ref.length > MAX_MODEL_REF_CHARS || !/\.gguf($|\?)/i.test(ref)) return null;
    if (/^https:\/\//i.test(ref)) return ref;
    if (!ref.startsWith("hf:")) return null;
    try {
      const hf = parseHfRef(ref);
      return hf.file ? hfResolveUrl(this.o.hubEndpoint, hf) : null;
    } catch {
      return null;
    }
  }
}
