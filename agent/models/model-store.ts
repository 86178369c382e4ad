import { createHash, randomUUID } from "node:crypto";
import { link, mkdir, readFile, rename, stat, symlink, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { MakinaError, splitPartUrls, type Logger } from "../../proto/index.js";
import { downloadFile, type DownloadProgress } from "./download.js";
import type { Resolve } from "./redirect-policy.js";
import { DEFAULT_HF_ENDPOINT, parseModelRef } from "./model-ref.js";
import { partsOnDisk } from "./parts-on-disk.js";
import { sha256File } from "./sha256-file.js";

/** A model available on disk. */
export interface LocalModel {
  path: string;
  sha256: string;
  sizeBytes: number;
}

/** Options of {@link ModelStore.pull}. */
export interface PullOptions {
  expectedSha256?: string;
  signal?: AbortSignal;
  onProgress?: (p: DownloadProgress) => void;
}

/** A model in the cache, as `makina model list` shows it. */
export interface CachedModel extends LocalModel {
  /** The URL it was downloaded from. */
  source: string;
}

/** Where `hf:` references resolve, and the token sent there (gated and private models need one). */
export interface HubOptions {
  endpoint: string;
  token?: string;
}

/** Options of {@link ModelStore}. */
export interface ModelStoreOptions {
  fetchImpl?: typeof fetch;
  /** Free bytes of the disk holding a path (injectable for tests). */
  freeBytes?: (path: string) => Promise<number>;
  /** @default Hugging Face, without a token */
  hub?: HubOptions;
  /** Resolves host names for the redirect policy (injectable for tests). */
  resolve?: Resolve;
}

/**
 * Makes models available on disk. Local paths are used in place; URLs and `hf:`
 * references download into a content-addressed cache (`models/<sha256>.gguf`):
 * bytes land in a partial file that survives interruptions (the next attempt
 * resumes it), and the finished file is renamed atomically into place, so a
 * half-written file is never taken for a model. Concurrent pulls of one URL
 * share one download. A split GGUF model (named by its first part, `…-00001-of-00003.gguf`) is pulled part by part
 * into the cache, and served from a directory of links named as llama.cpp looks for them (`models/split-<digest>/`):
 * its digest is the sha256 of its parts' sha256s ({@link splitDigest}, which a pin names), its size all of theirs.
 */
export class ModelStore {
  private readonly dir: string;
  private readonly inflight = new Map<string, { promise: Promise<LocalModel>; listeners: Set<(p: DownloadProgress) => void> }>();

  private readonly fetchImpl: typeof fetch | undefined;
  private readonly freeBytes?: (path: string) => Promise<number>;
  private readonly hub: HubOptions;
  private readonly resolve?: Resolve;

  constructor(
    dataDir: string,
    private readonly log: Logger,
    options: ModelStoreOptions = {},
  ) {
    this.dir = join(dataDir, "models");
    this.fetchImpl = options.fetchImpl;
    this.freeBytes = options.freeBytes;
    this.hub = options.hub ?? { endpoint: DEFAULT_HF_ENDPOINT };
    this.resolve = options.resolve;
  }

  /** The file serving `ref`, pulling it first when needed. */
  async pull(ref: string, options: PullOptions = {}): Promise<LocalModel> {
    const source = parseModelRef(ref, process.cwd(), this.hub.endpoint);
    if (source.kind === "file") {
      const files = await partsOnDisk(source.path);
      // A file hashed before and unchanged since (same size and modification time) is not read again:
      // a reconnect or a restart costs a stat, not minutes of hashing gigabytes.
      const digests: string[] = [];
      for (const file of files) {
        const info = await stat(file.path);
        const known = await this.knownDigest(file.path, info);
        const sha256 = known ?? (await sha256File(file.path, options.signal));
        if (!known) await this.rememberDigest(file.path, info, sha256);
        digests.push(sha256);
      }
      const sha256 = digests.length === 1 ? digests[0]! : splitDigest(digests);
      if (options.expectedSha256 && options.expectedSha256 !== sha256) {
        throw new MakinaError("invalid_value", `The model file ${source.path} has sha256 ${sha256}, expected ${options.expectedSha256}.`);
      }
      return { path: source.path, sha256, sizeBytes: files.reduce((n, f) => n + f.size, 0) };
    }
    const parts = splitPartUrls(source.url);
    return parts ? this.pullSplit(parts, options) : this.pullUrl(source.url, options);
  }

  /**
   * Every part of a split model, one after another (the first checked against a pinned digest), linked under the names
   * llama.cpp finds them by. Progress counts the parts before and estimates those after as large as the current one.
   */
  private async pullSplit(urls: string[], options: PullOptions): Promise<LocalModel> {
    // The names llama.cpp finds the parts by, checked before anything is downloaded.
    const names = urls.map((u) => {
      const name = basename(decodeURIComponentSafe(new URL(u).pathname));
      if (!/^[^\0/]+\.gguf$/i.test(name)) throw new MakinaError("invalid_value", `${u} names no file a split model's part can be saved as.`, { param: "model" });
      return name;
    });
    const pulled: LocalModel[] = [];
    let before = 0;
    let total = 0;
    for (const [i, url] of urls.entries()) {
      const onProgress = options.onProgress && ((p: DownloadProgress) => {
        // The parts after this one counted as large as it (gguf-split makes them alike), never less than said before
        // until the last part, whose total is the whole model's.
        const estimate = p.totalBytes && before + p.totalBytes * (urls.length - i);
        total = i === urls.length - 1 ? estimate : Math.max(total, estimate);
        const doneBytes = before + p.doneBytes;
        options.onProgress!({ ...p, doneBytes, totalBytes: total, etaSeconds: total && p.bytesPerSecond ? Math.ceil((total - doneBytes) / p.bytesPerSecond) : 0 });
      });
      const part = await this.pullUrl(url, { signal: options.signal, onProgress });
      pulled.push(part);
      before += part.sizeBytes;
    }
    // Its digest covers every part: a pinned one holds the whole model to what was pinned.
    const sha256 = splitDigest(pulled.map((p) => p.sha256));
    if (options.expectedSha256 && options.expectedSha256 !== sha256) {
      throw new MakinaError("invalid_value", `The split model downloaded from ${urls[0]} has sha256 ${sha256} (of its parts' sha256s), but the stack expects ${options.expectedSha256}.`);
    }
    const dir = join(this.dir, `split-${sha256}`);
    await mkdir(dir, { recursive: true });
    for (const [i, part] of pulled.entries()) {
      // Linked under a name of its own, then renamed into place: a pull beside this one, or a model loading, never
      // finds the part missing.
      const target = join(dir, names[i]!);
      const temporary = `${target}.${randomUUID()}.tmp`;
      // A hard link where the file system has them; else a symbolic one.
      await link(part.path, temporary).catch(() => symlink(part.path, temporary));
      await rename(temporary, target);
    }
    return { path: join(dir, names[0]!), sha256, sizeBytes: before };
  }

  /** One file from a URL: from the cache, or downloaded into it (one download shared by the pulls asking meanwhile). */
  private async pullUrl(url: string, options: PullOptions): Promise<LocalModel> {
    const cached = await this.lookup(url);
    if (cached) {
      if (options.expectedSha256 && options.expectedSha256 !== cached.sha256) {
        throw new MakinaError("invalid_value", `The model downloaded from ${url} has sha256 ${cached.sha256}, but the stack expects ${options.expectedSha256}.`);
      }
      return cached;
    }
    const running = this.inflight.get(url);
    if (running) {
      if (options.onProgress) running.listeners.add(options.onProgress);
      return running.promise;
    }
    const listeners = new Set<(p: DownloadProgress) => void>(options.onProgress ? [options.onProgress] : []);
    const promise = this.download(url, options, (p) => listeners.forEach((l) => l(p))).finally(() => this.inflight.delete(url));
    this.inflight.set(url, { promise, listeners });
    return promise;
  }

  /** Every model downloaded into the cache. */
  async list(): Promise<CachedModel[]> {
    const index = await this.readIndex();
    const out: CachedModel[] = [];
    for (const [source, sha256] of Object.entries(index)) {
      const path = join(this.dir, `${sha256}.gguf`);
      const info = await stat(path).catch(() => undefined);
      if (info?.isFile()) out.push({ source, path, sha256, sizeBytes: info.size });
    }
    return out;
  }

  private digestsFile(): string {
    return join(this.dir, "digests.json");
  }

  private async readDigests(): Promise<Record<string, { size: number; mtimeMs: number; sha256: string }>> {
    try {
      return JSON.parse(await readFile(this.digestsFile(), "utf8")) as Record<string, { size: number; mtimeMs: number; sha256: string }>;
    } catch {
      return {};
    }
  }

  /** The digest recorded for a local file, when the file has not changed since. */
  private async knownDigest(path: string, info: { size: number; mtimeMs: number }): Promise<string | undefined> {
    const entry = (await this.readDigests())[path];
    return entry && entry.size === info.size && entry.mtimeMs === info.mtimeMs ? entry.sha256 : undefined;
  }

  private async rememberDigest(path: string, info: { size: number; mtimeMs: number }, sha256: string): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const digests = await this.readDigests();
    digests[path] = { size: info.size, mtimeMs: info.mtimeMs, sha256 };
    const tmp = `${this.digestsFile()}.${randomUUID()}.tmp`;
    await writeFile(tmp, JSON.stringify(digests));
    await rename(tmp, this.digestsFile());
  }

  private indexFile(): string {
    return join(this.dir, "index.json");
  }

  private async readIndex(): Promise<Record<string, string>> {
    try {
      return JSON.parse(await readFile(this.indexFile(), "utf8")) as Record<string, string>;
    } catch {
      return {};
    }
  }

  private async lookup(url: string): Promise<LocalModel | undefined> {
    const sha256 = (await this.readIndex())[url];
    if (!sha256) return undefined;
    const path = join(this.dir, `${sha256}.gguf`);
    const info = await stat(path).catch(() => undefined);
    return info?.isFile() ? { path, sha256, sizeBytes: info.size } : undefined;
  }

  private async download(url: string, options: PullOptions, onProgress: (p: DownloadProgress) => void): Promise<LocalModel> {
    await mkdir(this.dir, { recursive: true });
    const log = this.log.child({ url });
    log.info("downloading model");
    const partialPath = join(this.dir, `.partial-${createHash("sha256").update(url).digest("hex").slice(0, 32)}`);
    const fromHub = new URL(url).origin === new URL(this.hub.endpoint).origin;
    const { sha256, sizeBytes } = await downloadFile(url, {
      partialPath,
      // The hub token goes to the hub only (and downloadFile keeps it from the CDN it redirects to).
      authorization: fromHub && this.hub.token ? `Bearer ${this.hub.token}` : undefined,
      accessHint: !fromHub
        ? undefined
        : this.hub.token
          ? "The agent's Hugging Face token was refused or has no access to this model: check the token, and that its account accepted the model's terms."
          : "The model is gated or private: accept its terms on the hub, then give the agent a Hugging Face token (HF_TOKEN, or hf_token in its config file).",
      expectedSha256: options.expectedSha256,
      signal: options.signal,
      onProgress,
      fetchImpl: this.fetchImpl,
      freeBytes: this.freeBytes,
      resolve: this.resolve,
      log,
    });
    const path = join(this.dir, `${sha256}.gguf`);
    await rename(partialPath, path);
    const index = await this.readIndex();
    index[url] = sha256;
    const indexTmp = `${this.indexFile()}.${randomUUID()}`;
    await writeFile(indexTmp, JSON.stringify(index, null, 2));
    await rename(indexTmp, this.indexFile());
    log.info("model downloaded", { sha256, sizeBytes });
    return { path, sha256, sizeBytes };
  }
}

/** A split model's digest: the sha256 of its parts' sha256s (hex, one a line, in order). */
export function splitDigest(parts: string[]): string {
  return createHash("sha256").update(parts.join("\n")).digest("hex");
}

/** A URL path's name decoded, or as it is when it does not decode. */
function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
