import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addressClass } from "../../proto/index.js";
import { ModelInspector, readGgufHeaderOverPublicHttps } from "../../relay/control/index.js";
import { operatorCertificates, type OperatorCertificates } from "../helpers/certificates.js";
import { writeSplitGguf } from "../helpers/gguf-metadata.js";
import { testModelPath } from "../helpers/models.js";

// A local HTTP server stands in for Hugging Face and for any https:// host (nothing outside can be reached here).
describe("what the Forge knows of a model before it is pulled", () => {
  let server: Server;
  let origin: string;
  const requests: { url: string; range: string | undefined }[] = [];
  const file = readFileSync(testModelPath());

  beforeAll(async () => {
    server = createServer((req, res) => {
      requests.push({ url: req.url!, range: req.headers.range });
      if (!req.url!.endsWith(".gguf") || req.url!.includes("missing")) return void res.writeHead(404).end();
      const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
      if (!m) return void res.writeHead(200, { "content-length": file.length, "accept-ranges": "bytes" }).end(req.method === "HEAD" ? undefined : file);
      const start = Number(m[1]);
      const end = Math.min(file.length - 1, m[2] ? Number(m[2]) : file.length - 1);
      res.writeHead(206, { "content-range": `bytes ${start}-${end}/${file.length}`, "content-length": end - start + 1, "accept-ranges": "bytes" }).end(req.method === "HEAD" ? undefined : file.subarray(start, end + 1));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });

  it("reads a remote GGUF file's header with node-llama-cpp: size, KV cache per token and trained context", async () => {
    const inspector = new ModelInspector({ hubEndpoint: origin });
    const facts = await inspector.facts("hf:karpathy/tinyllamas@v1/stories260K.gguf");
    expect(facts).toEqual({ weightsBytes: 1_171_200, kvBytesPerToken: expect.any(Number), trainContextSize: 2048, embeddingModel: false, rankingModel: false, source: "gguf-header" });
    expect(facts.kvBytesPerToken).toBeGreaterThan(0);
    expect(requests.every((r) => r.url === "/karpathy/tinyllamas/resolve/v1/stories260K.gguf")).toBe(true);
    // Remembered: asking again reads nothing, and the stack views see it without a read.
    const count = requests.length;
    expect(await inspector.facts("hf:karpathy/tinyllamas@v1/stories260K.gguf")).toEqual(facts);
    expect(inspector.known("hf:karpathy/tinyllamas@v1/stories260K.gguf")).toEqual(facts);
    expect(requests.length).toBe(count);
  });

  it("knows the catalog's models without reading anything, and nothing of what it cannot read", async () => {
    const inspector = new ModelInspector({ hubEndpoint: origin, timeoutMs: 2000 });
    const count = requests.length;
    expect((await inspector.facts("hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf")).source).toBe("catalog");
    expect(await inspector.facts("/models/on-the-worker.gguf")).toMatchObject({ weightsBytes: null, source: "unknown" });
    expect(await inspector.facts("Qwen/Qwen2.5-7B-Instruct-not-in-catalog")).toMatchObject({ weightsBytes: null, source: "unknown" });
    expect(requests.length).toBe(count);
    // A header that cannot be read (404) leaves the model unknown, and is not asked again at once.
    expect(await inspector.facts("hf:someone/missing/missing.gguf")).toMatchObject({ weightsBytes: null });
    const after = requests.length;
    expect(await inspector.facts("hf:someone/missing/missing.gguf")).toMatchObject({ weightsBytes: null });
    expect(requests.length).toBe(after);
  });

  // The relay reads on a member's behalf: only public https hosts, never this machine or its network. A local
  // HTTPS server plays the public hosts `models.example` and `cdn.example` (nothing outside can be reached from
  // here): their names resolve to it, and its address is let through as a public one would be. Every other
  // address is judged as the relay judges it.
  describe("a URL a member gives", () => {
    let secure: HttpsServer;
    let certs: OperatorCertificates;
    const hits: { host: string; path: string; range: string | undefined }[] = [];
    const names: Record<string, string[]> = {
      "models.example": ["127.0.0.1"],
      "cdn.example": ["127.0.0.1"],
      "intranet.example": ["10.0.0.7"],
      "sneaky.example": ["127.0.0.1", "10.0.0.8"],
      "metadata.example": ["::ffff:a9fe:a9fe"],
    };
    const resolve = async (host: string) => names[host] ?? Promise.reject(new Error(`ENOTFOUND ${host}`));
    const allowed = (a: string) => a === "127.0.0.1" || addressClass(a) === "public";
    /** A URL on the stand-in's port (the name resolving to it). */
    const at = (host: string, path: string) => `https://${host}:${(secure.address() as AddressInfo).port}${path}`;
    // The test model split in two as llama.cpp's gguf-split writes it.
    const splitDir = mkdtempSync(join(tmpdir(), "makina-inspect-split-"));
    const splitParts = Object.fromEntries(writeSplitGguf(testModelPath(), join(splitDir, "stories")).map((p) => [basename(p), readFileSync(p)]));
    const inspector = (reads?: number[]) =>
      new ModelInspector({ hubEndpoint: origin, readDirect: readGgufHeaderOverPublicHttps({ resolve, allowed, ca: readFileSync(certs.ca), reads }) });

    beforeAll(async () => {
      certs = operatorCertificates(["models.example", "cdn.example", "sneaky.example", "metadata.example"]);
      secure = createHttpsServer({ cert: readFileSync(certs.cert), key: readFileSync(certs.key) }, (req, res) => {
        hits.push({ host: req.headers.host!.replace(/:\d+$/, ""), path: req.url!, range: req.headers.range });
        const redirects: Record<string, string> = {
          "/hop.gguf": at("cdn.example", "/m.gguf"),
          "/to-metadata.gguf": at("metadata.example", "/m.gguf"),
          "/to-plain.gguf": at("models.example", "/m.gguf").replace("https:", "http:"),
          "/to-intranet.gguf": at("intranet.example", "/m.gguf"),
        };
        const to = redirects[req.url!];
        if (to) return void res.writeHead(302, { location: to }).end();
        // A split model's parts, by their names.
        const body = req.url!.startsWith("/split/") ? splitParts[req.url!.slice("/split/".length)] : file;
        if (!body) return void res.writeHead(404).end();
        const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? "")!;
        const end = Math.min(body.length - 1, Number(m[2]));
        res.writeHead(206, { "content-range": `bytes ${m[1]}-${end}/${body.length}` }).end(body.subarray(Number(m[1]), end + 1));
      });
      await new Promise<void>((r) => secure.listen(0, "127.0.0.1", r));
    });
    afterAll(async () => {
      await new Promise((r) => secure.close(r));
      rmSync(certs.dir, { recursive: true, force: true });
    });

    it("reads every part's header of a split model named by its first part: the model's whole size", async () => {
      hits.length = 0;
      const facts = await inspector().facts(at("models.example", "/split/stories-00001-of-00002.gguf"), "org_a");
      expect(facts).toMatchObject({ weightsBytes: 1_171_200, trainContextSize: 2048, source: "gguf-header" });
      expect(hits.map((h) => h.path).sort()).toEqual(["/split/stories-00001-of-00002.gguf", "/split/stories-00002-of-00002.gguf"]);
      hits.length = 0;
    });

    it("reads the header over https from a public host, following its redirects to public https hosts", async () => {
      const facts = await inspector().facts(at("models.example", "/hop.gguf"), "org_a");
      expect(facts).toMatchObject({ weightsBytes: 1_171_200, trainContextSize: 2048, source: "gguf-header" });
      expect(hits.map((h) => `${h.host}${h.path}`)).toEqual(["models.example/hop.gguf", "cdn.example/m.gguf"]);
    });

    it("refuses, unread, hosts that are not public and redirects that leave public https", async () => {
      hits.length = 0;
      const refs = [
        "http://models.example/m.gguf",
        "https://intranet.example/m.gguf",
        "https://sneaky.example/m.gguf",
        "https://metadata.example/m.gguf",
        "https://[::ffff:7f00:1]/m.gguf",
        "https://169.254.169.254/latest/m.gguf",
        "https://unknown.example/m.gguf",
        `https://models.example/${"x".repeat(2048)}.gguf`,
      ];
      const i = inspector();
      for (const ref of refs) expect([ref.slice(0, 50), (await i.facts(ref, "org_a")).source]).toEqual([ref.slice(0, 50), "unknown"]);
      expect(hits).toEqual([]);
      // A public host's redirect to the metadata service, to plain http or into the intranet: only the public host is asked.
      for (const path of ["/to-metadata.gguf", "/to-plain.gguf", "/to-intranet.gguf"]) expect((await i.facts(at("models.example", path), "org_a")).source).toBe("unknown");
      expect(hits.map((h) => h.path)).toEqual(["/to-metadata.gguf", "/to-plain.gguf", "/to-intranet.gguf"]);
    });

    it("reads more of the file when its header is longer than the first read", async () => {
      hits.length = 0;
      const facts = await inspector([1024, 2 * 1024 * 1024]).facts(at("models.example", "/m.gguf"), "org_a");
      expect(facts).toMatchObject({ weightsBytes: 1_171_200, source: "gguf-header" });
      expect(hits.map((h) => h.range)).toEqual(["bytes=0-1023", "bytes=0-2097151"]);
    });
  });

  it("reads two headers at a time for the whole relay, the others waiting their turn", async () => {
    let running = 0;
    let most = 0;
    const releases: (() => void)[] = [];
    const inspector = new ModelInspector({
      hubEndpoint: origin,
      readHeader: () =>
        new Promise((resolve) => {
          running++;
          most = Math.max(most, running);
          releases.push(() => {
            running--;
            resolve({ weightsBytes: 1, kvBytesPerToken: 1, trainContextSize: 1, source: "gguf-header" });
          });
        }),
    });
    const reads = Array.from({ length: 5 }, (_, i) => inspector.facts(`hf:someone/repo/at-once-${i}.gguf`, `org_${i}`));
    while (releases.length || running) {
      await new Promise((r) => setImmediate(r));
      releases.shift()?.();
    }
    expect((await Promise.all(reads)).map((f) => f.source)).toEqual(Array(5).fill("gguf-header"));
    expect(most).toBe(2);
  });

  it("starts at most 30 reads an organization a minute, and remembers at most 1,000 answers", async () => {
    let reads = 0;
    const clock = { now: Date.UTC(2026, 10, 24, 12) };
    const inspector = new ModelInspector({
      hubEndpoint: origin,
      now: () => clock.now,
      maxRemembered: 50,
      readHeader: async () => (reads++, { weightsBytes: 1, kvBytesPerToken: 1, trainContextSize: 1, source: "gguf-header" }),
    });
    const ref = (i: number) => `hf:someone/repo/m-${i}.gguf`;
    const sources = [];
    for (let i = 0; i < 40; i++) sources.push((await inspector.facts(ref(i), "org_a")).source);
    expect(sources.filter((s) => s === "gguf-header")).toHaveLength(30);
    expect(reads).toBe(30);
    // Another organization has reads of its own; a remembered answer costs none.
    expect((await inspector.facts(ref(40), "org_b")).source).toBe("gguf-header");
    expect((await inspector.facts(ref(0), "org_a")).source).toBe("gguf-header");
    expect(reads).toBe(31);
    // The next minute, org_a reads again; past 50 answers, the least recently asked are forgotten.
    clock.now += 60_000;
    for (let i = 41; i < 71; i++) await inspector.facts(ref(i), "org_a");
    expect(inspector.known(ref(0)).source).toBe("gguf-header");
    expect(inspector.known(ref(1)).source).toBe("unknown");
    expect(inspector.known(ref(70)).source).toBe("gguf-header");
  });
});
