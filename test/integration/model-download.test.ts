import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ModelStore } from "../../agent/models/model-store.js";
import { silentLogger } from "../../proto/index.js";
import { testModelPath } from "../helpers/models.js";

// A local HTTP server stands in for Hugging Face, which cannot be reached from here.
describe("pulling a model over HTTPS-style URLs (local HTTP server as a stand-in for the hub)", () => {
  const model = readFileSync(testModelPath());
  const sha256 = createHash("sha256").update(model).digest("hex");
  let server: Server;
  let base: string;
  let requests = 0;
  let dir: string;

  beforeAll(async () => {
    server = createServer((req, res) => {
      requests++;
      if (req.url === "/model.gguf") {
        res.writeHead(200, { "content-length": model.length });
        res.end(model);
      } else {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    dir = mkdtempSync(join(tmpdir(), "makina-models-"));
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it("downloads into the content-addressed cache with its sha256, reporting progress", async () => {
    const store = new ModelStore(dir, silentLogger());
    const progress: number[] = [];
    const local = await store.pull(`${base}/model.gguf`, { onProgress: (p) => progress.push(p.doneBytes) });
    expect(local).toEqual({ path: join(dir, "models", `${sha256}.gguf`), sha256, sizeBytes: model.length });
    expect(readFileSync(local.path).equals(model)).toBe(true);
    expect(progress.at(-1)).toBe(model.length);
  });

  it("does not download a model it already has", async () => {
    const before = requests;
    const local = await new ModelStore(dir, silentLogger()).pull(`${base}/model.gguf`);
    expect(local.sha256).toBe(sha256);
    expect(requests).toBe(before);
  });

  it("refuses a download whose checksum is wrong and leaves no file behind", async () => {
    const other = mkdtempSync(join(tmpdir(), "makina-models-"));
    const err = await new ModelStore(other, silentLogger()).pull(`${base}/model.gguf`, { expectedSha256: "0".repeat(64) }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "invalid_value", message: expect.stringContaining(`has sha256 ${sha256}`) });
    expect(readdirSync(join(other, "models"))).toEqual([]);
    rmSync(other, { recursive: true, force: true });
  });

  it("reports a clear error for a missing file or a failed download", async () => {
    await expect(new ModelStore(dir, silentLogger()).pull(`${base}/missing.gguf`)).rejects.toMatchObject({ message: expect.stringContaining("HTTP 404") });
    await expect(new ModelStore(dir, silentLogger()).pull("/no/such/model.gguf")).rejects.toMatchObject({ code: "not_found", message: "Model file not found: /no/such/model.gguf" });
  });

  it("uses a local file in place and records its sha256", async () => {
    const local = await new ModelStore(dir, silentLogger()).pull(testModelPath());
    expect(local).toEqual({ path: testModelPath(), sha256, sizeBytes: model.length });
  });
});
