import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ModelInspector } from "../../relay/control/index.js";
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
    expect(facts).toEqual({ weightsBytes: 1_171_200, kvBytesPerToken: expect.any(Number), trainContextSize: 2048, source: "gguf-header" });
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

  // The relay reads on a member's behalf: only public https hosts, never this machine or its network.
  const names: Record<string, string[]> = { "models.example": ["93.184.216.34"], "intranet.example": ["10.0.0.7"], "sneaky.example": ["93.184.216.35", "127.0.0.1"], "metadata.example": ["::ffff:a9fe:a9fe"] };
  const resolve = async (host: string) => names[host] ?? Promise.reject(new Error(`ENOTFOUND ${host}`));

  it("reads a direct URL only over https from a host whose every address is public", async () => {
    const read: string[] = [];
    const inspector = new ModelInspector({
      hubEndpoint: origin,
      resolve,
      // Stand-ins: no public https host can be reached from here, so what would be read is recorded instead.
      readHeader: async (url) => (read.push(url), { weightsBytes: 1, kvBytesPerToken: 1, trainContextSize: 1, source: "gguf-header" }),
    });
    const count = requests.length;
    for (const ref of [
      `${origin}/direct/stories260K.gguf`,
      "http://models.example/m.gguf",
      "https://intranet.example/m.gguf",
      "https://sneaky.example/m.gguf",
      "https://metadata.example/m.gguf",
      "https://127.0.0.1/m.gguf",
      "https://[::ffff:7f00:1]/m.gguf",
      "https://169.254.169.254/latest/meta-data/m.gguf",
      "https://unknown.example/m.gguf",
      `https://models.example/${"x".repeat(2048)}.gguf`,
    ]) {
      expect([ref.slice(0, 60), (await inspector.facts(ref, "org_a")).source]).toEqual([ref.slice(0, 60), "unknown"]);
    }
    expect(read).toEqual([]);
    expect(requests.length).toBe(count);
  });

  it("follows a direct URL's redirects only to public https hosts", async () => {
    const read: string[] = [];
    // The local server plays a public https host (`https://models.example`): every request to it goes there.
    const realFetch = globalThis.fetch;
    const hops: string[] = [];
    const fetchStandIn = async (input: string | URL | Request, init?: RequestInit) => {
      const url = new URL(String(input instanceof Request ? input.url : input));
      hops.push(url.href);
      const redirects: Record<string, string> = { "/a.gguf": "https://models.example/b.gguf", "/b.gguf": "/c.gguf", "/evil.gguf": "https://169.254.169.254/m.gguf", "/plain.gguf": "http://models.example/c.gguf" };
      const to = redirects[url.pathname];
      return to ? new Response(null, { status: 302, headers: { location: to } }) : realFetch(`${origin}/direct/stories260K.gguf`, init);
    };
    globalThis.fetch = fetchStandIn as typeof fetch;
    try {
      const inspector = new ModelInspector({
        hubEndpoint: origin,
        resolve,
        readHeader: async (url) => (read.push(url), { weightsBytes: 1, kvBytesPerToken: 1, trainContextSize: 1, source: "gguf-header" }),
      });
      expect((await inspector.facts("https://models.example/a.gguf", "org_a")).source).toBe("gguf-header");
      expect(read).toEqual(["https://models.example/c.gguf"]);
      expect((await inspector.facts("https://models.example/evil.gguf", "org_a")).source).toBe("unknown");
      expect((await inspector.facts("https://models.example/plain.gguf", "org_a")).source).toBe("unknown");
      expect(read).toHaveLength(1);
      // The metadata service itself was never asked.
      expect(hops.some((h) => h.includes("169.254"))).toBe(false);
    } finally {
      globalThis.fetch = realFetch;
    }
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
