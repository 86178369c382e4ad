import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Llama } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLlama } from "../../agent/runtimes/gguf/gguf-engine.js";
import { silentLogger } from "../../proto/index.js";
import { writeTinyReranker } from "../helpers/tiny-reranker.js";

/**
 * The reranker model tests make for themselves (issue 46's `/v1/rerank` needs one; ../shared/models holds none):
 * real node-llama-cpp loads it and ranks with it, one thread.
 */
describe("the tests' tiny reranker model", () => {
  const dir = mkdtempSync(join(tmpdir(), "makina-reranker-"));
  let llama: Llama;
  beforeAll(async () => {
    llama = await createLlama({ threads: 1, gpu: false, log: silentLogger() });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("is the same file each time, and node-llama-cpp ranks documents with it: a score of its own for each, the same each time", async () => {
    const [a, b] = [join(dir, "a.gguf"), join(dir, "b.gguf")];
    writeTinyReranker(a);
    writeTinyReranker(b);
    expect(readFileSync(a).equals(readFileSync(b))).toBe(true);
    const model = await llama.loadModel({ modelPath: a });
    try {
      expect(model.fileInsights.supportsRanking).toBe(true);
      const ranking = await model.createRankingContext({ threads: 1, contextSize: 512 });
      const documents = ["the cat sat on the mat", "a dog ran in the park", "birds fly over the sea"];
      const scores = await ranking.rankAll("a cat", documents);
      expect(scores).toHaveLength(3);
      for (const s of scores) expect(s > 0 && s < 1).toBe(true);
      expect(new Set(scores).size).toBe(3);
      expect(await ranking.rankAll("a cat", documents)).toEqual(scores);
      await ranking.dispose();
    } finally {
      await model.dispose();
    }
  });
});
