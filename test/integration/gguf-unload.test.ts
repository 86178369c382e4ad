import { describe, expect, it } from "vitest";
import { ggufAdapter } from "../../agent/runtimes/adapters/gguf-adapter.js";
import { ProcessConnection } from "../../agent/runtimes/gguf/process-connection.js";
import type { RuntimeEvent } from "../../agent/runtimes/model-runtime.js";
import { silentLogger } from "../../proto/index.js";
import { testModelPath } from "../helpers/models.js";
import { drain, story } from "../helpers/story-input.js";

const textOf = (events: RuntimeEvent[]) => events.map((e) => (e.type === "text" ? e.text : "")).join("");

describe("a GGUF model process unloading its model (an on-demand stack's sleep)", () => {
  it("stops a generation still running when the unload reaches the process before its cancel, disposes the model only after it ended, and loads it again for a wake sent behind the unload", async () => {
    const lines: string[] = [];
    const adapter = ggufAdapter({ threads: 1, maxContextSize: 2048, sequences: 1, gpu: false });
    const runtime = await adapter.start(
      { modelId: "busy-sleeper", ref: testModelPath(), path: testModelPath() },
      { runtimesDir: "/nonexistent", python: "python3", log: silentLogger(), output: (line) => void lines.push(line) },
    );
    const residency = await ProcessConnection.open(runtime.endpoint.replace(/^unix:/, ""));
    try {
      const before = textOf(await drain(runtime.chat(story(40))[Symbol.asyncIterator]()));
      // A long answer under way (its first text came), which nobody has canceled yet: the agent's cancel of a request
      // comes on that request's connection, and an unload on another, so the process may read the unload first.
      const busy = runtime.chat(story(1900))[Symbol.asyncIterator]();
      expect((await busy.next()).value).toMatchObject({ type: "text" });
      // Unload and wake on one connection: the process reads them in this order, the wake while the unload waits.
      residency.send({ type: "sleep" });
      residency.send({ type: "wake", threads: 1 });
      const answers = [await residency.next(), await residency.next()].map((f) => f?.type);
      const rest = await drain(busy);
      expect(answers).toEqual(["slept", "awake"]);
      // The request was stopped for the unload (503, what it used said), not failed on a disposed context.
      expect(rest.at(-1)).toMatchObject({ type: "stopped", error: { code: "runtime_unavailable", message: "The model is being unloaded." } });
      const used = (rest.at(-1) as { usage: { completionTokens: number } }).usage.completionTokens;
      expect(used).toBeGreaterThan(0);
      expect(used).toBeLessThan(1900);
      expect(lines.filter((l) => /dispos|generation failed|"level":"error"/i.test(l))).toEqual([]);
      expect(lines.filter((l) => /^gguf-server: (asleep|awake)/.test(l)).map((l) => l.split(":")[1]!.trim())).toEqual(["asleep", "awake"]);
      // Loaded again in the same process, it answers as before.
      expect(textOf(await drain(runtime.chat(story(40))[Symbol.asyncIterator]()))).toBe(before);
    } finally {
      residency.destroy();
      await runtime.close();
    }
  });
});
