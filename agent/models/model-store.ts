import { createHash, randomUUID } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { MakinaError, type Logger } from "../../proto/index.js";
import { parseModelRef } from "./model-ref.js";
import { sha256File } from "./sha256-file.js";

/** A model available on disk. */
export interface LocalModel {
  path: string;
  sha256: string;
  sizeBytes: number;
}

/** Download progress. */
export interface PullProgress {
  doneBytes: number;
  totalBytes: number;
}

/**
 * Makes models available on disk. Local paths are used in place; URLs and `hf:`
 * references download into a content-addressed cache (`models/<sha256>.gguf`),
 * written to a temporary file and renamed atomically, so a half-written file is
 * never taken for a model.
 */
export class ModelStore {
  private readonly dir: string;

  constructor(
    dataDir: string,
    private readonly log: Logger,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {
    this.dir = join(dataDir, "models");
  }

  /** The file serving `ref`, pulling it first when needed. */
  async pull(ref: string, options: { expectedSha256?: string; signal?: AbortSignal; onProgress?: (p: PullProgress) => void } = {}): Promise<LocalModel> {
    const source = parseModelRef(ref);
    if (source.kind === "file") {
      const info = await stat(source.path).catch(() => undefined);
      if (!info?.isFile()) throw new MakinaError("not_found", `Model file not found: ${source.path}`);
      const sha256 = await sha256File(source.path, options.signal);
      if (options.expectedSha256 && options.expectedSha256 !== sha256) {
        throw new MakinaError("invalid_value", `The model file ${source.path} has sha256 ${sha256}, expected ${options.expectedSha256}.`);
      }
      return { path: source.path, sha256, sizeBytes: info.size };
    }
    const cached = await this.lookup(source.url);
    if (cached) return cached;
    return this.download(source.url, options);
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

  private async download(url: string, options: { expectedSha256?: string; signal?: AbortSignal; onProgress?: (p: PullProgress) => void }): Promise<LocalModel> {
    await mkdir(this.dir, { recursive: true });
    const log = this.log.child({ url });
    log.info("downloading model");
    let res: Response;
    try {
      res = await this.fetchImpl(url, { signal: options.signal, redirect: "follow" });
    } catch (err) {
      throw new MakinaError("runtime_unavailable", `Could not download ${url}: ${(err as Error).message}`, { cause: err });
    }
    if (!res.ok || !res.body) throw new MakinaError("not_found", `Could not download ${url}: HTTP ${res.status}.`);
    const totalBytes = Number(res.headers.get("content-length") ?? 0);
    const tmp = join(this.dir, `.download-${randomUUID()}`);
    const hash = createHash("sha256");
    let doneBytes = 0;
    let lastReport = 0;
    try {
      const body = Readable.fromWeb(res.body as import("node:stream/web").ReadableStream<Uint8Array>);
      body.on("data", (chunk: Buffer) => {
        hash.update(chunk);
        doneBytes += chunk.length;
        if (Date.now() - lastReport > 250) {
          lastReport = Date.now();
          options.onProgress?.({ doneBytes, totalBytes });
        }
      });
      await pipeline(body, createWriteStream(tmp), { signal: options.signal });
      const sha256 = hash.digest("hex");
      if (options.expectedSha256 && options.expectedSha256 !== sha256) {
        throw new MakinaError("invalid_value", `The download of ${url} has sha256 ${sha256}, expected ${options.expectedSha256}.`);
      }
      const path = join(this.dir, `${sha256}.gguf`);
      await rename(tmp, path);
      const index = await this.readIndex();
      index[url] = sha256;
      const indexTmp = `${this.indexFile()}.${randomUUID()}`;
      await writeFile(indexTmp, JSON.stringify(index, null, 2));
      await rename(indexTmp, this.indexFile());
      options.onProgress?.({ doneBytes, totalBytes: totalBytes || doneBytes });
      log.info("model downloaded", { sha256, sizeBytes: doneBytes });
      return { path, sha256, sizeBytes: doneBytes };
    } catch (err) {
      await rm(tmp, { force: true });
      throw err instanceof MakinaError ? err : new MakinaError("runtime_unavailable", `The download of ${url} failed: ${(err as Error).message}`, { cause: err });
    }
  }
}
