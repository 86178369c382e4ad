import { hfResolveUrl, parseHfRef } from "../../proto/index.js";
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

/** Options of {@link ModelInspector}. */
export interface ModelInspectorOptions {
  readHeader?: GgufHeaderReader;
  /** Where `hf:` references resolve. @default https://huggingface.co */
  hubEndpoint?: string;
  /** How long one header read may take. @default 4000 */
  timeoutMs?: number;
  /** How long a failed read is remembered before it is tried again. @default 300000 */
  retryAfterMs?: number;
  now?: () => number;
}

/**
 * What is known of a model before it is pulled: the catalog's facts, or its GGUF
 * header read over the network for `https://` and `hf:` references (cached; a
 * failed read is retried only after a while). A path on a worker's disk cannot
 * be read from the relay: its facts are unknown until it is pulled.
 */
export class ModelInspector {
  private readonly cache = new Map<string, { facts: ModelFacts; until: number }>();
  private readonly inFlight = new Map<string, Promise<ModelFacts>>();
  private readonly o: Required<ModelInspectorOptions>;

  constructor(options: ModelInspectorOptions = {}) {
    this.o = { readHeader: readGgufHeader, hubEndpoint: "https://huggingface.co", timeoutMs: 4000, retryAfterMs: 300_000, now: Date.now, ...options };
  }

  /** What is known without reading anything: the catalog, or a header read before. */
  known(ref: string): ModelFacts {
    const known = findCatalogModel(ref);
    if (known) return known.facts;
    const url = this.headerUrl(ref);
    return (url && this.cache.get(url)?.facts) || UNKNOWN_MODEL;
  }

  async facts(ref: string): Promise<ModelFacts> {
    const known = findCatalogModel(ref);
    if (known) return known.facts;
    const url = this.headerUrl(ref);
    if (!url) return UNKNOWN_MODEL;
    const cached = this.cache.get(url);
    if (cached && cached.until > this.o.now()) return cached.facts;
    let pending = this.inFlight.get(url);
    if (!pending) {
      pending = this.o
        .readHeader(url, AbortSignal.timeout(this.o.timeoutMs))
        .then(
          (facts) => {
            this.cache.set(url, { facts, until: Number.POSITIVE_INFINITY });
            return facts;
          },
          () => {
            this.cache.set(url, { facts: UNKNOWN_MODEL, until: this.o.now() + this.o.retryAfterMs });
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
    if (!/\.gguf($|\?)/i.test(ref)) return null;
    if (/^https?:\/\//i.test(ref)) return ref;
    if (!ref.startsWith("hf:")) return null;
    try {
      const hf = parseHfRef(ref);
      return hf.file ? hfResolveUrl(this.o.hubEndpoint, hf) : null;
    } catch {
      return null;
    }
  }
}
