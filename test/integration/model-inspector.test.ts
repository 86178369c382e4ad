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
    expect((await inspector.facts(`${origin}/direct/stories260K.gguf`)).weightsBytes).toBe(1_171_200);
  });

  it("knows the catalog's models without reading anything, and nothing of what it cannot read", async () => {
    const inspector = new ModelInspector({ hubEndpoint: origin, timeoutMs: 2000 });
    const count = requests.length;
    expect((await inspector.facts("hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf")).source).toBe("catalog");
    expect(await inspector.facts("/models/on-the-worker.gguf")).toMatchObject({ weightsBytes: null, source: "unknown" });
    expect(await inspector.facts("Qwen/Qwen2.5-7B-Instruct-not-in-catalog")).toMatchObject({ weightsBytes: null, source: "unknown" });
    expect(requests.length).toBe(count);
    // A header that cannot be read (404) leaves the model unknown, and is not asked again at once.
    expect(await inspector.facts(`${origin}/missing.gguf`)).toMatchObject({ weightsBytes: null });
    const after = requests.length;
    expect(await inspector.facts(`${origin}/missing.gguf`)).toMatchObject({ weightsBytes: null });
    expect(requests.length).toBe(after);
  });
});
