import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { ggufAdapter } from "../../agent/runtimes/adapters/gguf-adapter.js";
import type { ModelRuntime } from "../../agent/runtimes/model-runtime.js";
import { silentLogger } from "../../proto/index.js";
import { testModelPath } from "../helpers/models.js";

const threadsOf = (r: ModelRuntime) => Number(/--threads (\d+)/.exec(execFileSync("ps", ["-o", "args=", "-p", String(r.pid)], { encoding: "utf8" }))?.[1]);

describe("GGUF models share the machine's thread budget", () => {
  it("gives the first model the whole budget and later ones what is left, and takes threads back when a model stops", async () => {
    const adapter = ggufAdapter({ threads: 3, maxContextSize: 256, sequences: 1, gpu: false });
    const ctx = { runtimesDir: "/nonexistent", python: "python3", log: silentLogger() };
    const model = (id: string) => ({ modelId: id, ref: testModelPath(), path: testModelPath() });
    const a = await adapter.start(model("a"), ctx);
    const b = await adapter.start(model("b"), ctx);
    try {
      expect(threadsOf(a)).toBe(3);
      expect(threadsOf(b)).toBe(1);
      await a.close();
      const c = await adapter.start(model("c"), ctx);
      try {
        expect(threadsOf(c)).toBe(2);
      } finally {
        await c.close();
      }
    } finally {
      await a.close();
      await b.close();
    }
  });
});
