import { describe, expect, it } from "vitest";
import { EMPTY_STEP_RESULT, MakinaError, type StepResult } from "../../proto/index.js";
import { isLocalModel, ModelFiles, type AskMachine } from "../../relay/control/index.js";

// The relay asks a machine whether it has the model a stack names by a local path (issue 21: a GGUF path that does
// not exist no longer passes as "can run"); here the machine is a function.
describe("looking for model files on machines", () => {
  const found: StepResult = { ...EMPTY_STEP_RESULT, modelPath: "/models/m.gguf", modelSizeBytes: 4_000_000, kvBytesPerToken: 2048, trainContextSize: 2048 };

  it("takes the machine's file and header as the model's facts, and its refusal as the reason", async () => {
    const answers: Record<string, () => Promise<StepResult>> = {
      "/models/m.gguf": async () => found,
      "/models/none.gguf": async () => Promise.reject(new MakinaError("not_found", "There is no file at /models/none.gguf on this machine.")),
      "/models/dir": async () => Promise.reject(new MakinaError("invalid_value", "/models/dir is a directory on this machine; the GGUF runtime needs a .gguf file.")),
    };
    const files = new ModelFiles((_machine, step) => answers[step.ref]!());
    expect(await files.check("mach_1", "gguf", "/models/m.gguf")).toEqual({ usable: true, facts: { weightsBytes: 4_000_000, kvBytesPerToken: 2048, trainContextSize: 2048, embeddingModel: false, rankingModel: false, source: "machine" } });
    expect(await files.check("mach_1", "gguf", "/models/none.gguf")).toEqual({ usable: false, reason: "There is no file at /models/none.gguf on this machine." });
    expect(await files.check("mach_1", "gguf", "/models/dir")).toMatchObject({ usable: false, reason: expect.stringContaining("is a directory") });
  });

  it("leaves the file unknown when the machine cannot be asked, fails otherwise, or does not answer in time", async () => {
    const never: AskMachine = (_m, _s, signal) => new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(new MakinaError("timeout", "no answer"))));
    // Not linked anywhere: unknown, and not kept (the machine linking a moment later is asked).
    let linked = false;
    const offlineFirst = new ModelFiles(() => (linked ? Promise.resolve(found) : Promise.reject(new MakinaError("machine_offline", "gone"))));
    expect(await offlineFirst.check("mach_1", "gguf", "/m.gguf")).toBeNull();
    linked = true;
    expect(await offlineFirst.check("mach_1", "gguf", "/m.gguf")).toMatchObject({ usable: true });
    expect(await new ModelFiles(never, { timeoutMs: 20 }).check("mach_1", "gguf", "/m.gguf")).toBeNull();
  });

  it("asks once for questions asked together, keeps the answer a while, and asks again after", async () => {
    const clock = { now: 1000 };
    let asked = 0;
    const files = new ModelFiles(
      async () => {
        asked++;
        return found;
      },
      { keepMs: 10_000, now: () => clock.now },
    );
    await Promise.all([files.check("mach_1", "gguf", "/models/m.gguf"), files.check("mach_1", "gguf", "/models/m.gguf")]);
    await files.check("mach_1", "gguf", "/models/m.gguf");
    expect(asked).toBe(1);
    // Another machine, runtime or path is another question.
    await files.check("mach_2", "gguf", "/models/m.gguf");
    expect(asked).toBe(2);
    clock.now += 10_001;
    await files.check("mach_1", "gguf", "/models/m.gguf");
    expect(asked).toBe(3);
  });

  it("asks afresh for a stack about to be made, remembers a silent machine a while, and asks one machine a few things at once at most", async () => {
    const clock = { now: 1000 };
    let asked = 0;
    let there = false;
    const files = new ModelFiles(
      async (_m, step) => {
        asked++;
        if (!there) throw new MakinaError("not_found", `There is no file at ${step.ref} on this machine.`);
        return found;
      },
      { now: () => clock.now },
    );
    expect(await files.check("mach_1", "gguf", "/models/m.gguf")).toMatchObject({ usable: false });
    there = true;
    // The panel's answer is kept; a create or deploy asks again, and finds the file put there since.
    expect(await files.check("mach_1", "gguf", "/models/m.gguf")).toMatchObject({ usable: false });
    expect(await files.check("mach_1", "gguf", "/models/m.gguf", { fresh: true })).toMatchObject({ usable: true });
    expect(await files.check("mach_1", "gguf", "/models/m.gguf")).toMatchObject({ usable: true });
    expect(asked).toBe(2);

    // A machine that says nothing (an agent older than the question) costs one wait, not one per question.
    let silent = 0;
    const quiet = new ModelFiles(
      (_m, _s, signal) => {
        silent++;
        return new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(new MakinaError("timeout", "no answer"))));
      },
      { timeoutMs: 10, now: () => clock.now },
    );
    expect(await quiet.check("mach_1", "gguf", "/a.gguf")).toBeNull();
    expect(await quiet.check("mach_1", "gguf", "/a.gguf")).toBeNull();
    expect(silent).toBe(1);

    // Four looks on one machine at once; a fifth is left unknown rather than queued.
    const waiting: (() => void)[] = [];
    const slow = new ModelFiles(() => new Promise<StepResult>((resolve) => waiting.push(() => resolve(found))));
    const five = [1, 2, 3, 4, 5].map((i) => slow.check("mach_1", "gguf", `/m${i}.gguf`));
    expect(await five[4]).toBeNull();
    expect(waiting).toHaveLength(4);
    // Another machine has its own four.
    const other = slow.check("mach_2", "gguf", "/m1.gguf");
    expect(waiting).toHaveLength(5);
    for (const w of waiting) w();
    expect((await Promise.all([...five.slice(0, 4), other])).every((v) => v?.usable)).toBe(true);
  });

  it("looks only at what names a place on the machine: not a download, a hub id or a server's model", () => {
    expect(isLocalModel("gguf", "/models/m.gguf")).toBe(true);
    expect(isLocalModel("gguf", "models/m.gguf")).toBe(true);
    expect(isLocalModel("gguf", "hf:owner/repo/m.gguf")).toBe(false);
    expect(isLocalModel("gguf", "https://example.com/m.gguf")).toBe(false);
    expect(isLocalModel("vllm", "Qwen/Qwen2.5-7B-Instruct")).toBe(false);
    expect(isLocalModel("vllm", "/srv/models/qwen")).toBe(true);
    expect(isLocalModel("mlx", "~/models/qwen-mlx")).toBe(true);
    expect(isLocalModel("openai", "/weird/name")).toBe(false);
    expect(isLocalModel("gguf", "")).toBe(false);
  });
});
