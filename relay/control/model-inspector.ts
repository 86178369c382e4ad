import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getPublicHttps, ggufFacts, hfResolveUrl, KeptAnswers, MinuteQuota, parseHfRef, Slots, splitPartNames, splitPartUrls, type PublicHttpsOptions } from "../../proto/index.js";
import { findCatalogModel, UNKNOWN_MODEL, type ModelFacts } from "../compatibility/index.js";

/** Reads what the compatibility rules need from a GGUF file's header at a URL. */
export type GgufHeaderReader = (url: string, signal: AbortSignal) => Promise<ModelFacts>;

/** What the compatibility rules need, from a GGUF file's parsed header. */
async function factsOf(info: Awaited<ReturnType<typeof import("node-llama-cpp").readGgufFileInfo>>): Promise<ModelFacts> {
  return { ...(await ggufFacts(info)), source: "gguf-header" };
}

/**
 * node-llama-cpp reads the header (ranged requests: a few hundred KiB, never the weights) and estimates the
 * model's size and its context's memory per token. For `hf:` references, from the hub the operator configured.
 */
export const readGgufHeader: GgufHeaderReader = async (url, signal) => {
  const { readGgufFileInfo } = await import("node-llama-cpp");
  return factsOf(await readGgufFileInfo(url, { signal, logWarnings: false, fetchRetryOptions: { retries: 0 } }));
};

/** {@link readGgufHeader} with the hub's token (gated and private repositories): sent only to the hub's URLs, which are the only ones it reads. */
export function readGgufHeaderWith(token: string): GgufHeaderReader {
  return async (url, signal) => {
    const { readGgufFileInfo } = await import("node-llama-cpp");
    return factsOf(await readGgufFileInfo(url, { signal, logWarnings: false, fetchRetryOptions: { retries: 0 }, fetchHeaders: { authorization: `Bearer ${token}` } }));
  };
}

/** The first bytes of a file read for its header, doubling while the header is longer, up to the last. */
const HEADER_READS = [4, 16, 64].map((mib) => mib * 1024 * 1024);

/**
 * For a URL a member gave: the file's first bytes fetched by the relay itself under {@link getPublicHttps}'s
 * policy (https, public addresses checked as the connection is made, each redirect checked) into a temporary
 * file, whose header node-llama-cpp then reads from disk. 4 MiB holds most headers; a longer one (a large
 * vocabulary) is read again with 16, then 64 MiB.
 */
export function readGgufHeaderOverPublicHttps(options: Omit<PublicHttpsOptions, "range" | "signal"> & { reads?: number[] } = {}): GgufHeaderReader {
  const { reads = HEADER_READS, ...policy } = options;
  return async (url, signal) => {
    const { readGgufFileInfo } = await import("node-llama-cpp");
    // A split model's parts each hold their tensors' infos: all are read, into files named as node-llama-cpp finds them.
    const parts = splitPartUrls(url) ?? [url];
    if (parts.length > MOST_HEADER_PARTS) throw new Error(`A model split into ${parts.length} parts is not judged from its headers.`);
    const dir = await mkdtemp(join(tmpdir(), "makina-header-"));
    try {
      const files = splitPartNames(join(dir, `head-00001-of-${String(parts.length).padStart(5, "0")}.gguf`)) ?? [join(dir, "head.gguf")];
      // A later part's header holds only its tensors' infos: its first read is all of it that is read.
      for (const [i, part] of parts.entries()) if (i > 0) await writeFile(files[i]!, (await getPublicHttps(part, { ...policy, range: [0, reads[0]! - 1], signal })).body);
      for (const size of reads) {
        const { body: bytes } = await getPublicHttps(url, { ...policy, range: [0, size - 1], signal });
        await writeFile(files[0]!, bytes);
        try {
          return await factsOf(await readGgufFileInfo(files[0]!, { sourceType: "filesystem", logWarnings: false, signal }));
        } catch (err) {
          // The whole file was read: the header itself is wrong. Otherwise it may go on past what was read.
          if (bytes.length < size || size === reads.at(-1)) throw err;
        }
      }
      throw new Error("unreachable");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  };
}

/** The most parts of a split model whose headers are read (each part's first bytes at least). */
const MOST_HEADER_PARTS = 16;

/** Whether a model's headers may be read: a whole file, or the first part of a split model of at most MOST_HEADER_PARTS (a later part names no model). */
function readableParts(url: string): boolean {
  try {
    return (splitPartUrls(url)?.length ?? 1) <= MOST_HEADER_PARTS;
  } catch {
    return false;
  }
}

/** Options of {@link ModelInspector}. */
export interface ModelInspectorOptions {
  /** Reads the header of an `hf:` reference's file, from the hub. */
  readHeader?: GgufHeaderReader;
  /** Reads the header at a URL a member gave. @default {@link readGgufHeaderOverPublicHttps} */
  readDirect?: GgufHeaderReader;
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
  now?: () => number;
}

/** The longest model reference read (a URL or `hf:` reference): longer ones are refused where they are given. */
export const MAX_MODEL_REF_CHARS = 2048;
/**
 * What is known of a model before it is pulled: the catalog's facts, or its GGUF header read over the network
 * (remembered; a failed read is tried again only after a while). A path on a worker's disk cannot be read from
 * the relay: its facts are unknown until it is pulled.
 *
 * The relay reads on a member's behalf, so what it reads is bounded (docs/security.md):
 * - `hf:` references, from the hub the operator configured;
 * - `https://` URLs, read by the relay itself under {@link getPublicHttps}'s policy: public addresses only,
 *   checked as each connection is made, and redirects (at most 5) only to such URLs (never to this machine,
 *   its network or a cloud's metadata service, never to plain http);
 * - at most `readsPerMinute` reads an organization starts a minute, and `maxRemembered` answers kept.
 */
export class ModelInspector {
  private readonly cache: KeptAnswers<ModelFacts>;
  private readonly inFlight = new Map<string, Promise<ModelFacts>>();
  /** Reads started per organization in the current minute. */
  private readonly reads: MinuteQuota;
  private readonly o: Required<ModelInspectorOptions>;
  private readonly reading = new Slots(2);

  constructor(options: ModelInspectorOptions = {}) {
    this.o = {
      readHeader: readGgufHeader,
      readDirect: readGgufHeaderOverPublicHttps(),
      hubEndpoint: "https://huggingface.co",
      timeoutMs: 4000,
      retryAfterMs: 300_000,
      readsPerMinute: 30,
      maxRemembered: 1000,
      now: Date.now,
      ...options,
    };
    this.cache = new KeptAnswers(this.o.maxRemembered);
    this.reads = new MinuteQuota(this.o.readsPerMinute);
  }

  /** What is known without reading anything: the catalog, or a header read before. */
  known(ref: string): ModelFacts {
    const known = findCatalogModel(ref);
    if (known) return known.facts;
    const url = this.headerUrl(ref);
    return (url && this.cache.peek(url)) || UNKNOWN_MODEL;
  }

  /** What is known, reading the header when it can be read (`orgId`: whose read it is, for the bound per minute). */
  async facts(ref: string, orgId = ""): Promise<ModelFacts> {
    const known = findCatalogModel(ref);
    if (known) return known.facts;
    const url = this.headerUrl(ref);
    if (!url || !readableParts(url)) return UNKNOWN_MODEL;
    const cached = this.cache.get(url, this.o.now());
    if (cached) return cached;
    let pending = this.inFlight.get(url);
    if (!pending) {
      if (!this.reads.take(orgId, this.o.now())) return UNKNOWN_MODEL;
      const read = ref.startsWith("hf:") ? this.o.readHeader : this.o.readDirect;
      // Two reads at a time for the whole relay (a direct URL's may hold up to 64 MiB while it is parsed).
      pending = this.reading
        .run(() => read(url, AbortSignal.timeout(this.o.timeoutMs)))
        .then(
          (facts) => {
            this.cache.set(url, facts, Number.POSITIVE_INFINITY);
            return facts;
          },
          () => {
            this.cache.set(url, UNKNOWN_MODEL, this.o.now() + this.o.retryAfterMs);
            return UNKNOWN_MODEL;
          },
        )
        .finally(() => this.inFlight.delete(url));
      this.inFlight.set(url, pending);
    }
    return pending;
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
