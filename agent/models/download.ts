import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { readFile, rm, stat, statfs, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { Readable } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import { pipeline } from "node:stream/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { MakinaError, type Logger } from "../../proto/index.js";
import { pinnedFetch } from "./pinned-fetch.js";
import { addressesOf, checkRedirect, resolveHost, type Resolve } from "./redirect-policy.js";

/** Progress of a download. */
export interface DownloadProgress {
  doneBytes: number;
  /** 0 when the server did not say. */
  totalBytes: number;
  /** Over the last few seconds; 0 at first. */
  bytesPerSecond: number;
  /** 0 when unknown. */
  etaSeconds: number;
}

/** Options of {@link downloadFile}. */
export interface DownloadOptions {
  /** Where bytes accumulate; kept between attempts (and runs) so a download resumes. */
  partialPath: string;
  /** Expected sha256 (hex); the hub's `x-linked-etag` is used when this is absent. */
  expectedSha256?: string;
  signal?: AbortSignal;
  onProgress?: (p: DownloadProgress) => void;
  /** Attempts after a dropped connection, each resuming where the last stopped. @default 5 */
  attempts?: number;
  /** Makes the first request instead of a connection to the origin's resolved addresses (tests that stand a name in). */
  fetchImpl?: typeof fetch;
  log: Logger;
  /** Free bytes of the disk holding `path` (injectable for tests). */
  freeBytes?: (path: string) => Promise<number>;
  /** Sent with the first request, and with redirects to the same origin only (a hub token, say). */
  authorization?: string;
  /** Added to the error when the server answers 401 or 403 (how to get access). */
  accessHint?: string;
  /** Resolves host names for the redirect policy (injectable for tests). */
  resolve?: Resolve;
}

/** Redirects followed before giving up. */
const MAX_REDIRECTS = 8;

const SHA256 = /^[0-9a-f]{64}$/;

/** Write errors that another attempt cannot fix: the disk (or quota, or file size limit) is full, or it is not writable. */
const LOCAL_WRITE_ERRORS = new Set(["ENOSPC", "EDQUOT", "EFBIG", "EROFS", "EACCES", "EPERM"]);

function localWriteFailure(url: string, path: string, written: number, err: NodeJS.ErrnoException): MakinaError {
  const full = err.code === "ENOSPC" || err.code === "EDQUOT" || err.code === "EFBIG";
  const what = full ? `there is no more room to write (${err.code})` : `the file cannot be written (${err.code})`;
  const hint = full ? "Free some space and deploy again: the download resumes where it stopped." : `Check the permissions of ${dirname(path)}.`;
  return new MakinaError("runtime_unavailable", `The download of ${url} stopped after ${written} bytes: ${what} on ${dirname(path)}. ${hint}`, { cause: err });
}

async function defaultFreeBytes(path: string): Promise<number> {
  const s = await statfs(path);
  return s.bavail * s.bsize;
}

async function hashExisting(path: string): Promise<{ hash: ReturnType<typeof createHash>; size: number }> {
  const hash = createHash("sha256");
  let size = 0;
  try {
    for await (const chunk of createReadStream(path)) {
      hash.update(chunk as Buffer);
      size += (chunk as Buffer).length;
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  return { hash, size };
}

/** A sha256 in an entity tag, or undefined when the tag is something else (an MD5, a version…). */
function sha256Tag(value: string | null): string | undefined {
  const tag = (value ?? "").replace(/^W\//, "").replaceAll('"', "").toLowerCase();
  return SHA256.test(tag) ? tag : undefined;
}

/**
 * Fetches `url`, following redirects by hand: Hugging Face answers a model file with a redirect to its CDN
 * and vouches for the file's sha256 in that redirect's `x-linked-etag`, which an automatic redirect would
 * lose. The authorization header never leaves the origin it was meant for. Every request connects to addresses
 * resolved once and checked: the origin's, then each redirect's that its check passed, never to what a name
 * resolves to a moment later.
 */
async function fetchFollowing(
  url: string,
  headers: Record<string, string>,
  fetchImpl: typeof fetch | undefined,
  signal: AbortSignal | undefined,
  resolve: Resolve,
): Promise<{ res: Response; announcedSha256: string | undefined }> {
  const origin = new URL(url);
  let current = origin;
  // The origin is resolved once: its first request connects to these addresses, and redirects are judged by them.
  const originAddresses = await addressesOf(origin.hostname, resolve);
  /** The addresses the request goes to and nowhere else: the origin's, then each redirect's that its check passed. */
  let checked = originAddresses;
  let linked: string | undefined;
  const sent = { ...headers };
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    // (A fetch given by a test carries the first request itself.)
    const res = hop === 0 && fetchImpl ? await fetchImpl(current, { signal, redirect: "manual", headers: sent }) : await pinnedFetch(current, checked, { headers: sent, signal });
    linked ??= sha256Tag(res.headers.get("x-linked-etag"));
    const location = res.headers.get("location");
    if (res.status >= 300 && res.status < 400 && location) {
      await res.body?.cancel();
      const next = new URL(location, current);
      checked = await checkRedirect(origin, next, resolve, originAddresses);
      if (next.origin !== current.origin) delete sent.authorization;
      current = next;
      continue;
    }
    return { res, announcedSha256: linked ?? sha256Tag(res.headers.get("etag")) };
  }
  throw new MakinaError("not_found", `Could not download ${url}: more than ${MAX_REDIRECTS} redirects.`);
}

/** A strong entity tag (usable in `If-Range`), or undefined for a weak one or none. */
function strongEtag(value: string | null): string | undefined {
  return value && !value.startsWith("W/") ? value : undefined;
}

/**
 * What identifies the version of the file whose bytes a partial download holds (its strong ETag, else its
 * Last-Modified), kept beside it, so that a resumed request asks for the rest of that version only
 * (`If-Range`): a file changed on the server in between comes whole, never spliced onto the old bytes.
 */
const validatorFile = (partialPath: string) => `${partialPath}.validator`;

async function readValidator(partialPath: string, url: string): Promise<string | undefined> {
  try {
    const v = JSON.parse(await readFile(validatorFile(partialPath), "utf8")) as { url?: unknown; validator?: unknown };
    return v.url === url && typeof v.validator === "string" && v.validator ? v.validator : undefined;
  } catch {
    return undefined;
  }
}

async function keepValidator(partialPath: string, url: string, res: Response): Promise<void> {
  const validator = strongEtag(res.headers.get("etag")) ?? res.headers.get("last-modified") ?? undefined;
  if (validator) await writeFile(validatorFile(partialPath), JSON.stringify({ url, validator }));
  else await rm(validatorFile(partialPath), { force: true });
}

/**
 * Downloads `url` into `partialPath`, resuming with HTTP Range (and `If-Range`, so only bytes of the same
 * version of the file are appended) after a dropped connection, starting over when the server ignores Range
 * or the file changed, checking free disk space first and hashing as bytes arrive. Redirects are followed by
 * the rules of {@link checkRedirect}. Resolves with the sha256 of the complete file; on a checksum mismatch
 * the partial file is removed.
 */
export async function downloadFile(url: string, options: DownloadOptions): Promise<{ sha256: string; sizeBytes: number }> {
  const freeBytes = options.freeBytes ?? defaultFreeBytes;
  const attempts = options.attempts ?? 5;
  let lastError: unknown;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    if (options.signal?.aborted) throw MakinaError.from(options.signal.reason);
    // Back off before each retry, so a flapping server is not hammered.
    if (attempt > 1) await sleep(Math.min(8000, 250 * 2 ** (attempt - 2)), undefined, { signal: options.signal }).catch(() => {});
    if (options.signal?.aborted) throw MakinaError.from(options.signal.reason);
    let { hash, size: have } = await hashExisting(options.partialPath);
    const validator = have > 0 ? await readValidator(options.partialPath, url) : undefined;
    if (have > 0 && !validator) {
      // Bytes of a version nothing identifies: appending to them could splice two versions of the file.
      options.log.info("a partial download the server gave no validator for: starting over", { had: have });
      await rm(options.partialPath, { force: true });
      ({ hash, size: have } = { hash: createHash("sha256"), size: 0 });
    }
    let res: Response;
    let announced: string | undefined;
    try {
      const headers: Record<string, string> = {};
      if (have > 0 && validator) {
        headers.range = `bytes=${have}-`;
        headers["if-range"] = validator;
      }
      if (options.authorization) headers.authorization = options.authorization;
      ({ res, announcedSha256: announced } = await fetchFollowing(url, headers, options.fetchImpl, options.signal, options.resolve ?? resolveHost));
    } catch (err) {
      if (err instanceof MakinaError) throw err;
      if (options.signal?.aborted) throw MakinaError.from(options.signal.reason);
      lastError = err;
      options.log.warn("download attempt failed", { attempt, err });
      continue;
    }
    if (res.status === 416) {
      // What we hold is not a prefix the server recognises: start over.
      await rm(options.partialPath, { force: true });
      await res.body?.cancel();
      continue;
    }
    if (res.status === 401 || res.status === 403) {
      await res.body?.cancel();
      throw new MakinaError("model_access_denied", `Could not download ${url}: HTTP ${res.status}.${options.accessHint ? ` ${options.accessHint}` : ""}`);
    }
    if (!res.ok || !res.body) {
      await res.body?.cancel();
      throw new MakinaError("not_found", `Could not download ${url}: HTTP ${res.status}.`);
    }
    const resumed = res.status === 206 && have > 0 && res.headers.get("content-range")?.startsWith(`bytes ${have}-`) === true;
    const length = Number(res.headers.get("content-length") ?? 0);
    const totalBytes = resumed ? Number(/\/(\d+)$/.exec(res.headers.get("content-range") ?? "")?.[1] ?? have + length) : length;
    const startAt = resumed ? have : 0;
    const streamHash = resumed ? hash : createHash("sha256");
    if (!resumed && have > 0) options.log.info("the server ignored Range, or the file changed: starting the download over", { had: have });
    const needed = (totalBytes || length) - startAt;
    const free = await freeBytes(dirname(options.partialPath));
    if (needed > free) {
      await res.body.cancel();
      throw new MakinaError("runtime_unavailable", `Not enough disk space for ${url}: ${needed} more bytes are needed, ${free} are free on ${dirname(options.partialPath)}.`);
    }

    if (!resumed) await keepValidator(options.partialPath, url, res);
    let doneBytes = startAt;
    const window: { at: number; bytes: number }[] = [{ at: Date.now(), bytes: doneBytes }];
    let lastReport = 0;
    const report = (force = false) => {
      const now = Date.now();
      if (!force && now - lastReport < 250) return;
      lastReport = now;
      window.push({ at: now, bytes: doneBytes });
      while (window.length > 2 && now - window[0]!.at > 5000) window.shift();
      const first = window[0]!;
      const seconds = (now - first.at) / 1000;
      const bytesPerSecond = seconds > 0 ? Math.round((doneBytes - first.bytes) / seconds) : 0;
      const etaSeconds = bytesPerSecond > 0 && totalBytes > doneBytes ? Math.ceil((totalBytes - doneBytes) / bytesPerSecond) : 0;
      options.onProgress?.({ doneBytes, totalBytes, bytesPerSecond, etaSeconds });
    };
    const body = Readable.fromWeb(res.body as WebReadableStream<Uint8Array>);
    body.on("data", (chunk: Buffer) => {
      streamHash.update(chunk);
      doneBytes += chunk.length;
      report();
    });
    try {
      await pipeline(body, createWriteStream(options.partialPath, { flags: resumed ? "a" : "w" }), { signal: options.signal });
    } catch (err) {
      if (options.signal?.aborted) throw MakinaError.from(options.signal.reason);
      const code = (err as NodeJS.ErrnoException).code;
      if (code && LOCAL_WRITE_ERRORS.has(code)) {
        body.destroy();
        const written = (await stat(options.partialPath).catch(() => null))?.size ?? 0;
        throw localWriteFailure(url, options.partialPath, written, err as NodeJS.ErrnoException);
      }
      lastError = err;
      options.log.warn("download interrupted; it will resume", { attempt, doneBytes, err });
      continue;
    }
    if (totalBytes && doneBytes < totalBytes) {
      lastError = new Error(`the connection closed after ${doneBytes} of ${totalBytes} bytes`);
      options.log.warn("download cut short; it will resume", { attempt, doneBytes, totalBytes });
      continue;
    }
    report(true);
    const sha256 = streamHash.digest("hex");
    const expected = options.expectedSha256 ?? announced;
    await rm(validatorFile(options.partialPath), { force: true });
    if (expected && expected !== sha256) {
      await rm(options.partialPath, { force: true });
      throw new MakinaError("invalid_value", `The download of ${url} has sha256 ${sha256}, but ${options.expectedSha256 ? "the stack expects" : "the server announced"} ${expected}. The file was discarded.`);
    }
    return { sha256, sizeBytes: (await stat(options.partialPath)).size };
  }
  throw new MakinaError("runtime_unavailable", `The download of ${url} failed after ${attempts} attempts: ${(lastError as Error | undefined)?.message ?? "unknown error"}`, { cause: lastError });
}
