import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ModelStore } from "../../agent/models/model-store.js";
import { silentLogger } from "../../proto/index.js";
import { REPO_ROOT, testModelPath } from "../helpers/models.js";

/**
 * A local HTTP server stands in for Hugging Face, which cannot be reached from
 * here. Each path misbehaves in one way a real network or server can.
 */
describe("pulling models over HTTP (a local server stands in for the hub)", () => {
  const model = readFileSync(testModelPath());
  const sha256 = createHash("sha256").update(model).digest("hex");
  const half = Math.floor(model.length / 2);
  let server: Server;
  let base: string;
  // A stand-in for Hugging Face's CDN: another origin, where the hub redirects model files.
  let cdn: Server;
  let cdnBase: string;
  const cdnSeen: { path: string; authorization: string | undefined }[] = [];
  const TOKEN = "hf_StandInTokenForTheLocalHub0123456789";
  let dir: string;
  const seen: { path: string; range: string | undefined; status: number; authorization?: string; ifRange?: string | string[] }[] = [];
  const attempts = new Map<string, number>();

  /** Another version of the model file: the same size, other bytes. */
  const older = Buffer.from(model);
  older[100] = older[100]! ^ 0xff;
  const md5 = (b: Buffer) => `"${createHash("md5").update(b).digest("hex")}"`;

  /**
   * Serves a file as a web server does: with a strong ETag (unless `noValidator`), honouring Range (unless
   * told not to) only while `If-Range` names the version it serves now.
   */
  function serve(req: IncomingMessage, res: ServerResponse, options: { honourRange: boolean; etag?: string; dropFirstAt?: number; noValidator?: boolean; body?: (attempt: number) => Buffer }) {
    const n = (attempts.get(req.url!) ?? 0) + 1;
    attempts.set(req.url!, n);
    const body = options.body?.(n) ?? model;
    const validator = md5(body);
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? "");
    const sameVersion = req.headers["if-range"] === undefined || req.headers["if-range"] === validator;
    const start = options.honourRange && range && sameVersion ? Number(range[1]) : 0;
    const status = start > 0 ? 206 : 200;
    seen.push({ path: req.url!, range: req.headers.range, status, ifRange: req.headers["if-range"] });
    const headers: Record<string, string | number> = { "content-length": body.length - start, ...(options.etag ? { "x-linked-etag": `"${options.etag}"` } : {}) };
    if (!options.noValidator) headers.etag = validator;
    if (status === 206) headers["content-range"] = `bytes ${start}-${body.length - 1}/${body.length}`;
    res.writeHead(status, headers);
    if (n === 1 && options.dropFirstAt !== undefined) {
      // Send part of the body, then cut the connection.
      res.write(body.subarray(start, options.dropFirstAt), () => res.socket?.destroy());
      return;
    }
    res.end(body.subarray(start));
  }

  beforeAll(async () => {
    server = createServer((req, res) => {
      switch (req.url) {
        case "/model.gguf":
          return serve(req, res, { honourRange: true, etag: sha256 });
        case "/drops.gguf":
          return serve(req, res, { honourRange: true, dropFirstAt: half });
        case "/ignores-range.gguf":
          return serve(req, res, { honourRange: false, dropFirstAt: half });
        case "/liar.gguf":
          return serve(req, res, { honourRange: true, etag: "0".repeat(64) });
        case "/shared.gguf":
          return serve(req, res, { honourRange: true });
        // The file is replaced on the server between the dropped first attempt and the next.
        case "/changes.gguf":
          return serve(req, res, { honourRange: true, dropFirstAt: half, body: (n) => (n === 1 ? older : model) });
        case "/no-validator.gguf":
          return serve(req, res, { honourRange: true, dropFirstAt: half, noValidator: true });
        // Redirects that try to steer the agent at this machine, or at a cloud's metadata service.
        case "/to-loopback.gguf":
          seen.push({ path: req.url, range: undefined, status: 302 });
          return res.writeHead(302, { location: `${base}/secret.gguf` }).end();
        case "/to-metadata.gguf":
          seen.push({ path: req.url, range: undefined, status: 302 });
          return res.writeHead(302, { location: "http://169.254.169.254/latest/meta-data/iam/security-credentials/" }).end();
        // A redirect to a host name the machine's own DNS does not know: only the addresses the check resolved
        // can reach it.
        case "/to-named-cdn.gguf":
          seen.push({ path: req.url, range: undefined, status: 302 });
          return res.writeHead(302, { location: `http://cdn.example:${new URL(cdnBase).port}/blobs/${sha256}` }).end();
        case "/secret.gguf":
          seen.push({ path: req.url, range: undefined, status: 200 });
          return res.writeHead(200).end("secret");
        // As the hub answers a model file: a redirect to the CDN that vouches for the sha256 in x-linked-etag.
        case "/org/open/resolve/main/model.gguf":
        case "/org/gated/resolve/main/model.gguf":
        case "/org/open/resolve/main/liar.gguf": {
          seen.push({ path: req.url, range: req.headers.range, status: 302, authorization: req.headers.authorization });
          if (req.url.includes("/gated/") && req.headers.authorization !== `Bearer ${TOKEN}`) return res.writeHead(401).end("Access to model org/gated is restricted.");
          const etag = req.url.endsWith("liar.gguf") ? "1".repeat(64) : sha256;
          return res.writeHead(302, { location: `${cdnBase}/blobs/${sha256}`, "x-linked-etag": `"${etag}"`, "x-linked-size": model.length }).end();
        }
        default:
          res.writeHead(404).end();
      }
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    cdn = createServer((req, res) => {
      cdnSeen.push({ path: req.url!, authorization: req.headers.authorization });
      // The CDN's own ETag is not a sha256 (an MD5 here), so only the hub's redirect can vouch for the file.
      res.setHeader("etag", `"${createHash("md5").update(model).digest("hex")}"`);
      return serve(req, res, { honourRange: true });
    });
    await new Promise<void>((r) => cdn.listen(0, "localhost", r));
    cdnBase = `http://localhost:${(cdn.address() as AddressInfo).port}`;
  });
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "makina-models-"));
    seen.length = 0;
    cdnSeen.length = 0;
    attempts.clear();
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    await new Promise((r) => cdn.close(r));
  });

  const resumedFrom = (range: string | undefined) => Number(/^bytes=(\d+)-$/.exec(range ?? "")?.[1] ?? -1);
  const cacheFiles = () => readdirSync(join(dir, "models")).filter((f) => f !== "index.json");

  it("downloads into the content-addressed cache, checks the hub's checksum and reports progress with rate", async () => {
    const progress: { doneBytes: number; totalBytes: number; bytesPerSecond: number }[] = [];
    const local = await new ModelStore(dir, silentLogger()).pull(`${base}/model.gguf`, { onProgress: (p) => progress.push(p) });
    expect(local).toEqual({ path: join(dir, "models", `${sha256}.gguf`), sha256, sizeBytes: model.length });
    expect(readFileSync(local.path).equals(model)).toBe(true);
    expect(progress.at(-1)).toMatchObject({ doneBytes: model.length, totalBytes: model.length });
    expect(progress.every((p) => p.bytesPerSecond >= 0)).toBe(true);
    expect(cacheFiles()).toEqual([`${sha256}.gguf`]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("does not download a model it already has", async () => {
    const store = new ModelStore(dir, silentLogger());
    await store.pull(`${base}/model.gguf`);
    const before = seen.length;
    expect((await new ModelStore(dir, silentLogger()).pull(`${base}/model.gguf`)).sha256).toBe(sha256);
    expect(seen.length).toBe(before);
    expect(await store.list()).toEqual([{ source: `${base}/model.gguf`, path: join(dir, "models", `${sha256}.gguf`), sha256, sizeBytes: model.length }]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("resumes with HTTP Range after the connection drops midway, ending with the right sha256", async () => {
    const local = await new ModelStore(dir, silentLogger()).pull(`${base}/drops.gguf`);
    expect(local.sha256).toBe(sha256);
    expect(readFileSync(local.path).equals(model)).toBe(true);
    expect(seen.map((s) => s.status)).toEqual([200, 206]);
    expect(seen[0]!.range).toBeUndefined();
    expect(resumedFrom(seen[1]!.range)).toBeGreaterThan(0);
    expect(resumedFrom(seen[1]!.range)).toBeLessThanOrEqual(half);
    rmSync(dir, { recursive: true, force: true });
  });

  it("starts over when the server ignores Range", async () => {
    const local = await new ModelStore(dir, silentLogger()).pull(`${base}/ignores-range.gguf`);
    expect(local.sha256).toBe(sha256);
    // It asked to resume, got the whole file instead, and started over.
    expect(seen.map((s) => s.status)).toEqual([200, 200]);
    expect(resumedFrom(seen[1]!.range)).toBeGreaterThan(0);
    expect(readFileSync(local.path).equals(model)).toBe(true);
    rmSync(dir, { recursive: true, force: true });
  });

  it("resumes only the same version of the file (If-Range): a file replaced in between comes whole, never spliced", async () => {
    const local = await new ModelStore(dir, silentLogger()).pull(`${base}/changes.gguf`);
    expect(local.sha256).toBe(sha256);
    expect(readFileSync(local.path).equals(model)).toBe(true);
    // It asked for the rest of the version it held; the server, holding another, sent the whole new one.
    expect(seen.map((s) => [s.status, s.ifRange])).toEqual([
      [200, undefined],
      [200, md5(older)],
    ]);
    expect(resumedFrom(seen[1]!.range)).toBeGreaterThan(0);
    rmSync(dir, { recursive: true, force: true });
  });

  it("starts over, rather than resume, when the server gave no validator for the bytes it holds", async () => {
    const local = await new ModelStore(dir, silentLogger()).pull(`${base}/no-validator.gguf`);
    expect(local.sha256).toBe(sha256);
    expect(seen.map((s) => [s.status, s.range])).toEqual([
      [200, undefined],
      [200, undefined],
    ]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses a redirect from a mirror on the internet to this machine (http://127.0.0.1), and one to a cloud's metadata address", async () => {
    // mirror.example stands in for a mirror on the internet: it resolves to a public address, and the fetch is
    // sent to the local server (no DNS or internet here).
    const resolve = async (host: string) => (host === "mirror.example" ? ["203.0.113.10"] : ["127.0.0.1"]);
    const viaMirror: typeof fetch = (input, init) => {
      const url = new URL(String(input));
      if (url.hostname === "mirror.example") url.hostname = "127.0.0.1";
      return fetch(url, init);
    };
    const port = new URL(base).port;
    const store = new ModelStore(dir, silentLogger(), { resolve, fetchImpl: viaMirror });
    const err = await store.pull(`http://mirror.example:${port}/to-loopback.gguf`).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: "invalid_value",
      message: `The download of http://mirror.example:${port}/to-loopback.gguf was redirected to ${base}/secret.gguf, a loopback address: refused.`,
    });
    // Even the mirror's own LAN neighbours are off limits: only addresses of the mirror's kind are.
    const metadata = await new ModelStore(dir, silentLogger()).pull(`${base}/to-metadata.gguf`).catch((e: unknown) => e);
    expect(metadata).toMatchObject({ code: "invalid_value", message: expect.stringContaining("169.254.169.254/latest/meta-data/iam/security-credentials/, a link-local address: refused.") });
    expect(seen.map((s) => s.path)).toEqual(["/to-loopback.gguf", "/to-metadata.gguf"]);
    expect(cacheFiles()).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("connects each request to the addresses resolved and checked for it, never to what a name resolves to afterwards", async () => {
    // origin.example and cdn.example are known only to the resolver the download checks with (they stand for
    // names that resolve one way when checked and another a moment later): the download reaches the servers
    // only if each request goes to the addresses that were checked.
    const asked: string[] = [];
    const resolve = async (host: string) => {
      asked.push(host);
      return host === "cdn.example" || host === "origin.example" ? ["127.0.0.1"] : Promise.reject(new Error(`getaddrinfo ENOTFOUND ${host}`));
    };
    const local = await new ModelStore(dir, silentLogger(), { resolve }).pull(`http://origin.example:${new URL(base).port}/to-named-cdn.gguf`);
    expect(local.sha256).toBe(sha256);
    expect(readFileSync(local.path).equals(model)).toBe(true);
    expect(cdnSeen.map((s) => s.path)).toEqual([`/blobs/${sha256}`]);
    // Each name resolved once: the origin for its request (and the redirect's judgement), the CDN for its check;
    // no connection asked again.
    expect(asked).toEqual(["origin.example", "cdn.example"]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses hf: references that reach outside the repository", async () => {
    const store = new ModelStore(dir, silentLogger(), { hub: { endpoint: base } });
    for (const ref of ["hf:org/open/../../secret.gguf", "hf:../open/model.gguf", "hf:org/open/./model.gguf", "hf:org/open@../main/model.gguf", "hf:org/open/%2e%2e/model.gguf", "hf:org/open/a\\b.gguf", "hf:org/open//model.gguf", "hf:org/open/model.gguf?x=1"]) {
      const err = await store.pull(ref).catch((e: unknown) => e);
      expect([ref, err]).toEqual([ref, expect.objectContaining({ code: "invalid_value", message: expect.stringContaining("Not a valid Hugging Face reference") })]);
    }
    expect(seen).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("checks a pinned digest against a model it already has, too", async () => {
    await new ModelStore(dir, silentLogger()).pull(`${base}/model.gguf`);
    const err = await new ModelStore(dir, silentLogger()).pull(`${base}/model.gguf`, { expectedSha256: "e".repeat(64) }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "invalid_value", message: `The model downloaded from ${base}/model.gguf has sha256 ${sha256}, but the stack expects ${"e".repeat(64)}.` });
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses a download whose checksum does not match what the server announced, leaving no file behind", async () => {
    const err = await new ModelStore(dir, silentLogger()).pull(`${base}/liar.gguf`).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "invalid_value", message: expect.stringContaining(`has sha256 ${sha256}, but the server announced ${"0".repeat(64)}`) });
    expect(cacheFiles()).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses a download whose checksum does not match the one the stack expects", async () => {
    const err = await new ModelStore(dir, silentLogger()).pull(`${base}/model.gguf`, { expectedSha256: "f".repeat(64) }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "invalid_value", message: expect.stringContaining("the stack expects") });
    expect(cacheFiles()).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("shares one download between two pulls of the same model", async () => {
    const store = new ModelStore(dir, silentLogger());
    const [a, b] = await Promise.all([store.pull(`${base}/shared.gguf`), store.pull(`${base}/shared.gguf`)]);
    expect(a).toEqual(b);
    expect(seen.filter((s) => s.path === "/shared.gguf")).toHaveLength(1);
    rmSync(dir, { recursive: true, force: true });
  });

  it("checks free disk space before downloading", async () => {
    const err = await new ModelStore(dir, silentLogger(), { freeBytes: async () => 1000 }).pull(`${base}/model.gguf`).catch((e: unknown) => e);
    expect(err).toMatchObject({ message: expect.stringContaining(`Not enough disk space`) });
    expect((err as Error).message).toContain(`${model.length} more bytes are needed, 1000 are free`);
    expect(cacheFiles()).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("stops with a clear error when the disk fills up midway, and resumes once there is room", async () => {
    // The full disk is a stand-in: a file size limit (ulimit -f) makes the kernel refuse writes past 512 blocks,
    // as a full disk would, without needing a small file system. The pull runs in a child process under it.
    const script = [
      `const { ModelStore } = await import(${JSON.stringify(join(REPO_ROOT, "dist", "agent", "models", "model-store.js"))});`,
      `const { silentLogger } = await import(${JSON.stringify(join(REPO_ROOT, "dist", "proto", "index.js"))});`,
      `await new ModelStore(process.argv[1], silentLogger()).pull(process.argv[2]).then(`,
      `  () => console.log("{}"), (e) => console.log(JSON.stringify({ code: e.code, message: e.message })));`,
    ].join("\n");
    const child = await promisify(execFile)("/bin/sh", ["-c", 'ulimit -f 512 && exec "$0" --input-type=module -e "$1" "$2" "$3"', process.execPath, script, dir, `${base}/model.gguf`], { timeout: 30_000 });
    const failure = JSON.parse(child.stdout) as { code: string; message: string };
    expect(failure.code).toBe("runtime_unavailable");
    const stopped = new RegExp(`^The download of ${base}/model\\.gguf stopped after (\\d+) bytes: there is no more room to write \\(EFBIG\\) on ${join(dir, "models")}\\. Free some space and deploy again: the download resumes where it stopped\\.$`).exec(failure.message);
    expect(stopped, failure.message).not.toBeNull();
    const written = Number(stopped![1]);
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(model.length);
    // One request: a full disk is not retried.
    expect(seen).toHaveLength(1);
    const local = await new ModelStore(dir, silentLogger()).pull(`${base}/model.gguf`);
    expect(local.sha256).toBe(sha256);
    expect(resumedFrom(seen[1]!.range)).toBe(written);
    expect(cacheFiles()).toEqual([`${sha256}.gguf`]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("pulls hf: references from the configured hub with its token, checks the sha256 its redirect vouches for, and keeps the token from the CDN", async () => {
    const store = new ModelStore(dir, silentLogger(), { hub: { endpoint: base, token: TOKEN } });
    const local = await store.pull("hf:org/gated/model.gguf");
    expect(local.sha256).toBe(sha256);
    expect(readFileSync(local.path).equals(model)).toBe(true);
    const atHub = seen.filter((s) => s.path.startsWith("/org/"));
    expect(atHub.map((s) => [s.path, s.authorization])).toEqual([["/org/gated/resolve/main/model.gguf", `Bearer ${TOKEN}`]]);
    expect(cdnSeen).toEqual([{ path: `/blobs/${sha256}`, authorization: undefined }]);
    // A URL elsewhere never gets the hub's token.
    await store.pull(`${cdnBase}/elsewhere.gguf`);
    expect(cdnSeen[1]).toEqual({ path: "/elsewhere.gguf", authorization: undefined });
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses a gated model without a token, or with a token the hub refuses, saying what to do", async () => {
    await expect(new ModelStore(dir, silentLogger(), { hub: { endpoint: base } }).pull("hf:org/gated/model.gguf")).rejects.toMatchObject({
      code: "model_access_denied",
      message: `Could not download ${base}/org/gated/resolve/main/model.gguf: HTTP 401. The model is gated or private: accept its terms on the hub, then give the agent a Hugging Face token (HF_TOKEN, or hf_token in its config file).`,
    });
    await expect(new ModelStore(dir, silentLogger(), { hub: { endpoint: base, token: "hf_wrong" } }).pull("hf:org/gated/model.gguf")).rejects.toMatchObject({
      code: "model_access_denied",
      message: expect.stringContaining("HTTP 401. The agent's Hugging Face token was refused or has no access to this model"),
    });
    expect(cdnSeen).toEqual([]);
    expect(cacheFiles()).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("discards a file whose bytes do not match the sha256 in the hub's redirect", async () => {
    const err = await new ModelStore(dir, silentLogger(), { hub: { endpoint: base } }).pull("hf:org/open/liar.gguf").catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "invalid_value", message: expect.stringContaining(`but the server announced ${"1".repeat(64)}. The file was discarded.`) });
    expect(cacheFiles()).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("reports a clear error for a missing file", async () => {
    await expect(new ModelStore(dir, silentLogger()).pull(`${base}/missing.gguf`)).rejects.toMatchObject({ message: expect.stringContaining("HTTP 404") });
    await expect(new ModelStore(dir, silentLogger()).pull("/no/such/model.gguf")).rejects.toMatchObject({ code: "not_found", message: "Model file not found: /no/such/model.gguf" });
    rmSync(dir, { recursive: true, force: true });
  });

  it("uses a local file in place and records its sha256", async () => {
    expect(await new ModelStore(dir, silentLogger()).pull(testModelPath())).toEqual({ path: testModelPath(), sha256, sizeBytes: model.length });
    rmSync(dir, { recursive: true, force: true });
  });
});
