import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { readGgufFileInfo } from "node-llama-cpp";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkModelFile } from "../../agent/models/check-model-file.js";
import { ModelStore, splitDigest } from "../../agent/models/model-store.js";
import { silentLogger } from "../../proto/index.js";
import { writeSplitGguf } from "../helpers/gguf-metadata.js";
import { testModelPath } from "../helpers/models.js";
import { startTestGateway } from "../helpers/test-gateway.js";

/**
 * A GGUF model split in two parts as llama.cpp's gguf-split writes them (the test model's tensors, half in each),
 * served by a local HTTP server standing in for the hub: the agent pulls every part and serves the model from a
 * directory of links named as llama.cpp finds a split model's parts.
 */
describe("a split GGUF model", () => {
  const dir = mkdtempSync(join(tmpdir(), "makina-split-"));
  const [first, second] = writeSplitGguf(testModelPath(), join(dir, "stories"));
  const bytes = [readFileSync(first), readFileSync(second)];
  const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
  const asked: string[] = [];
  let server: Server;
  let base: string;

  beforeAll(async () => {
    server = createServer((req, res) => {
      asked.push(req.url!);
      const i = [`/split/${basename(first)}`, `/split/${basename(second)}`].indexOf(req.url!);
      if (i < 0) return void res.writeHead(404).end();
      res.writeHead(200, { "content-length": bytes[i]!.length }).end(bytes[i]);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/split`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it("is pulled part by part, with progress over all of them, into the cache, and served from links named as llama.cpp looks for them", async () => {
    const data = mkdtempSync(join(tmpdir(), "makina-split-store-"));
    try {
      const store = new ModelStore(data, silentLogger());
      const progress: { doneBytes: number; totalBytes: number }[] = [];
      const total = bytes[0]!.length + bytes[1]!.length;
      const local = await store.pull(`${base}/${basename(first)}`, { onProgress: (p) => progress.push(p) });
      // Named by its first part; its digest covers both parts' (the sha256 of their sha256s), its size both sizes.
      const digest = createHash("sha256").update(`${sha(bytes[0]!)}\n${sha(bytes[1]!)}`).digest("hex");
      expect(splitDigest([sha(bytes[0]!), sha(bytes[1]!)])).toBe(digest);
      expect(local).toEqual({ path: join(data, "models", `split-${digest}`, basename(first)), sha256: digest, sizeBytes: total });
      // Each part is the cache's own file, linked beside the other under its name.
      expect(statSync(local.path).ino).toBe(statSync(join(data, "models", `${sha(bytes[0]!)}.gguf`)).ino);
      expect(statSync(join(dirname(local.path), basename(second))).ino).toBe(statSync(join(data, "models", `${sha(bytes[1]!)}.gguf`)).ino);
      // node-llama-cpp reads both parts from the first's path.
      expect((await readGgufFileInfo(local.path)).splicedParts).toBe(2);
      // Progress counts both parts and never goes back; it ends at the whole size.
      expect(progress.map((p) => p.doneBytes)).toEqual([...progress.map((p) => p.doneBytes)].sort((a, b) => a - b));
      expect(progress.at(-1)).toMatchObject({ doneBytes: total, totalBytes: total });
      // Pulled again: from the cache, nothing asked of the server.
      const before = asked.length;
      expect(await store.pull(`${base}/${basename(first)}`)).toEqual(local);
      expect(asked.length).toBe(before);
      // A later part is refused, naming the first.
      await expect(store.pull(`${base}/${basename(second)}`)).rejects.toMatchObject({ code: "invalid_value", message: expect.stringContaining("name its first part (stories-00001-of-00002.gguf)") });
      // A pin names the whole model: the first part's digest alone is not it; the whole one is.
      await expect(new ModelStore(mkdtempSync(join(tmpdir(), "makina-split-pin-")), silentLogger()).pull(`${base}/${basename(first)}`, { expectedSha256: sha(bytes[0]!) })).rejects.toMatchObject({ code: "invalid_value" });
      expect((await store.pull(`${base}/${basename(first)}`, { expectedSha256: digest })).sha256).toBe(digest);
      // Two pulls at once link the parts side by side without either failing.
      const twice = await Promise.all([store.pull(`${base}/${basename(first)}`), store.pull(`${base}/${basename(first)}`)]);
      expect(twice.map((t) => t.path)).toEqual([local.path, local.path]);
    } finally {
      rmSync(data, { recursive: true, force: true });
    }
  });

  it("counts every part of a split model on disk, in its size, digest and header check, and refuses one whose other part is missing", async () => {
    const store = new ModelStore(mkdtempSync(join(tmpdir(), "makina-split-local-")), silentLogger());
    expect(await store.pull(first)).toMatchObject({ sizeBytes: bytes[0]!.length + bytes[1]!.length, sha256: splitDigest([sha(bytes[0]!), sha(bytes[1]!)]) });
    // What the relay's panel and the memory budget read of it: both parts' size, the whole model's weights.
    expect(await checkModelFile(first, "gguf", silentLogger())).toMatchObject({ modelSizeBytes: bytes[0]!.length + bytes[1]!.length, trainContextSize: 2048 });
    const lone = mkdtempSync(join(tmpdir(), "makina-split-lone-"));
    const [alone, other] = writeSplitGguf(testModelPath(), join(lone, "alone"));
    rmSync(other);
    await expect(store.pull(alone)).rejects.toMatchObject({ code: "not_found", message: expect.stringContaining("alone-00002-of-00002.gguf") });
  });

  it("is deployed from its first part's URL and answers a chat through the gateway", async () => {
    const gw = await startTestGateway({ model: `${base}/${basename(first)}` });
    try {
      const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
      const reply = await client.chat.completions.create({ model: "stories", messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 8, temperature: 0 });
      expect(reply.choices[0]!.message.content!.length).toBeGreaterThan(0);
      expect(asked.filter((a) => a.endsWith(basename(second))).length).toBeGreaterThanOrEqual(1);
    } finally {
      await gw.close();
    }
  });
});
