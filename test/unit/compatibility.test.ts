import { describe, expect, it } from "vitest";
import { checkStack, findCatalogModel, kvBytesPerToken, refusalReasons, UNKNOWN_MODEL, type StackPlan } from "../../relay/compatibility/index.js";
import { defaultModelId } from "../../relay/control/stack-facts.js";
import type { HardwareSummary } from "../../relay/store/index.js";

const GiB = 1024 ** 3;

const cpuBox: HardwareSummary = {
  platform: "linux",
  os: "Debian GNU/Linux 12",
  arch: "x64",
  cpuModel: "EPYC",
  cpuPhysicalCores: 2,
  cpuLogicalCores: 2,
  memoryBytes: 24 * GiB,
  gpus: [],
  disks: [{ mount: "/", sizeBytes: 250 * GiB, freeBytes: 80 * GiB }],
  accelerators: [],
};
const h100: HardwareSummary = {
  ...cpuBox,
  memoryBytes: 256 * GiB,
  gpus: [{ vendor: "NVIDIA", model: "NVIDIA H100 80GB HBM3", vramBytes: 80 * GiB, driverVersion: "550.54.15" }],
  disks: [{ mount: "/", sizeBytes: 2000 * GiB, freeBytes: 1500 * GiB }],
  accelerators: ["cuda", "vulkan"],
};
const mac: HardwareSummary = { ...cpuBox, platform: "darwin", os: "macOS 15", arch: "arm64", memoryBytes: 16 * GiB, gpus: [{ vendor: "Apple", model: "Apple M3", vramBytes: 0, driverVersion: "" }], accelerators: ["metal"] };

const plan = (p: Partial<StackPlan>): StackPlan => ({
  runtime: "gguf",
  modelRef: "/models/tiny.gguf",
  model: UNKNOWN_MODEL,
  hardware: cpuBox,
  contextSize: 4096,
  sequences: 2,
  harness: null,
  orchestrator: null,
  hasEndpoint: true,
  ...p,
});
const catalog = (ref: string) => findCatalogModel(ref)!.facts;
const levels = (p: Partial<StackPlan>) => Object.fromEntries(checkStack(plan(p)).checks.map((c) => [c.topic, c.level]));

describe("the compatibility rules", () => {
  it("passes a small GGUF model on a CPU machine and says why each part works", () => {
    const r = checkStack(plan({ modelRef: "hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf", model: catalog("hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf") }));
    expect(r.ok).toBe(true);
    expect(r.checks.map((c) => [c.topic, c.level])).toEqual([
      ["runtime", "ok"],
      ["format", "ok"],
      ["memory", "ok"],
      ["disk", "ok"],
      ["endpoint", "ok"],
    ]);
    expect(r.checks.find((c) => c.topic === "memory")!.message).toBe("Needs about 770 MiB (398 MiB weights + 96 MiB KV cache for 2 × 4,096 tokens); fits in 24 GiB of RAM.");
  });

  it("refuses a model too large for the machine's memory, with the numbers", () => {
    const ref = "hf:bartowski/Llama-3.3-70B-Instruct-GGUF/Llama-3.3-70B-Instruct-Q4_K_M.gguf";
    const r = checkStack(plan({ modelRef: ref, model: catalog(ref) }));
    expect(r.ok).toBe(false);
    expect(refusalReasons(r)).toBe("Needs about 44.3 GiB (39.6 GiB weights + 2.5 GiB KV cache for 2 × 4,096 tokens), more than the machine's 24 GiB of RAM.");
    // The same model fits on a GPU server.
    expect(checkStack(plan({ modelRef: ref, model: catalog(ref), hardware: h100 })).checks.find((c) => c.topic === "memory")).toMatchObject({ level: "ok", message: expect.stringContaining("fits in 80 GiB of VRAM") });
  });

  it("warns when a GGUF model fits only partly in VRAM", () => {
    const ref = "hf:bartowski/Llama-3.3-70B-Instruct-GGUF/Llama-3.3-70B-Instruct-Q4_K_M.gguf";
    const small = { ...h100, gpus: [{ ...h100.gpus[0]!, vramBytes: 24 * GiB }] };
    expect(levels({ modelRef: ref, model: catalog(ref), hardware: small }).memory).toBe("warn");
  });

  it("refuses vLLM without Linux, an NVIDIA GPU and CUDA, and MLX off Apple silicon", () => {
    expect(refusalReasons(checkStack(plan({ runtime: "vllm", modelRef: "Qwen/Qwen2.5-7B-Instruct" })))).toContain("vLLM needs an NVIDIA GPU; none was detected on this machine.");
    expect(refusalReasons(checkStack(plan({ runtime: "vllm", modelRef: "Qwen/Qwen2.5-7B-Instruct", hardware: { ...h100, accelerators: [] } })))).toContain("no CUDA backend is usable here");
    expect(refusalReasons(checkStack(plan({ runtime: "vllm", modelRef: "Qwen/Qwen2.5-7B-Instruct", hardware: mac })))).toContain("vLLM needs Linux; this machine runs darwin/arm64.");
    expect(checkStack(plan({ runtime: "vllm", modelRef: "Qwen/Qwen2.5-7B-Instruct", model: catalog("Qwen/Qwen2.5-7B-Instruct"), hardware: h100 })).ok).toBe(true);
    expect(refusalReasons(checkStack(plan({ runtime: "mlx", modelRef: "mlx-community/Qwen2.5-0.5B-Instruct-4bit" })))).toBe("MLX needs macOS on Apple silicon; this machine runs linux/x64.");
    expect(checkStack(plan({ runtime: "mlx", modelRef: "mlx-community/Qwen2.5-0.5B-Instruct-4bit", model: catalog("mlx-community/Qwen2.5-0.5B-Instruct-4bit"), hardware: mac })).ok).toBe(true);
  });

  it("checks vLLM's memory against 90% of VRAM, and says so when VRAM is unknown", () => {
    const ref = "Qwen/Qwen2.5-72B-Instruct-AWQ";
    const one = { ...h100, gpus: [{ ...h100.gpus[0]!, vramBytes: 40 * GiB }] };
    expect(checkStack(plan({ runtime: "vllm", modelRef: ref, model: catalog(ref), hardware: one })).checks.find((c) => c.topic === "memory")).toMatchObject({
      level: "fail",
      message: expect.stringContaining("more than the 36 GiB of VRAM vLLM may use (90% of 40 GiB)"),
    });
    const unknown = { ...h100, gpus: [{ ...h100.gpus[0]!, vramBytes: 0 }] };
    expect(levels({ runtime: "vllm", modelRef: ref, model: catalog(ref), hardware: unknown }).memory).toBe("warn");
  });

  it("matches the model's format to the runtime", () => {
    expect(levels({ modelRef: "Qwen/Qwen2.5-7B-Instruct" }).format).toBe("fail");
    expect(levels({ runtime: "vllm", modelRef: "/models/x.gguf", hardware: h100 }).format).toBe("fail");
    expect(levels({ runtime: "mlx", modelRef: "hf:a/b/c.gguf", hardware: mac }).format).toBe("fail");
    expect(levels({ runtime: "openai", modelRef: "llama3.1:8b" }).format).toBe("ok");
  });

  it("checks the download against the largest free disk", () => {
    const ref = "hf:bartowski/Qwen2.5-32B-Instruct-GGUF/Qwen2.5-32B-Instruct-Q4_K_M.gguf";
    const full = { ...cpuBox, memoryBytes: 64 * GiB, disks: [{ mount: "/", sizeBytes: 100 * GiB, freeBytes: 10 * GiB }] };
    expect(checkStack(plan({ modelRef: ref, model: catalog(ref), hardware: full })).checks.find((c) => c.topic === "disk")).toEqual({
      topic: "disk",
      param: "model",
      level: "fail",
      message: "The download takes 18.5 GiB, but the largest free space on the machine is 10 GiB.",
    });
    // A local path is not downloaded: no disk check.
    expect(levels({ modelRef: "/models/big.gguf", model: catalog(ref), hardware: full }).disk).toBeUndefined();
  });

  it("says what it cannot know: unknown hardware, unknown model size", () => {
    const r = checkStack(plan({ hardware: null }));
    expect(r.ok).toBeNull();
    expect(r.checks[0]).toEqual({ topic: "runtime", param: "machine", level: "warn", message: "The machine has not connected yet, so its hardware is unknown." });
    expect(levels({}).memory).toBe("warn");
    // An incompatible format is refused even before the machine connects.
    expect(checkStack(plan({ hardware: null, modelRef: "Qwen/Qwen2.5-7B-Instruct" })).ok).toBe(false);
  });

  it("names the choice each check is about, so a form says it at that field", () => {
    const r = checkStack(plan({ runtime: "vllm", modelRef: "/models/x.gguf", hardware: cpuBox }));
    expect(r.checks.filter((c) => c.level === "fail").map((c) => [c.topic, c.param])).toEqual([
      ["runtime", "runtime"],
      ["format", "model"],
    ]);
    expect(checkStack(plan({ modelRef: "/models/x.gguf" })).checks.find((c) => c.topic === "memory")?.param).toBe("model");
  });

  it("says a context asked past the model's: GGUF serves the model's (a warning), vLLM refuses to start (a failure at the field)", () => {
    const model = { weightsBytes: 4 * 1024 ** 3, kvBytesPerToken: 131_072, trainContextSize: 32_768, source: "catalog" as const };
    const vllm = checkStack(plan({ runtime: "vllm", modelRef: "Qwen/Qwen2.5-7B-Instruct", model, hardware: h100, contextSize: 65_536, maxContext: 65_536 }));
    expect(vllm.checks.filter((c) => c.level === "fail")).toEqual([
      { topic: "memory", param: "max_context", level: "fail", message: "vLLM refuses a context longer than the model's 32,768 tokens; ask 32,768 or less." },
    ]);
    const gguf = checkStack(plan({ model, contextSize: 65_536, maxContext: 65_536 }));
    expect(gguf.checks.find((c) => c.param === "max_context")).toMatchObject({ level: "warn", message: "The model was trained for 32,768 tokens: the runtime serves 32,768, not the 65,536 asked." });
    // Within the model's length, or left to the machine's default: nothing to say.
    expect(checkStack(plan({ runtime: "vllm", modelRef: "Qwen/Qwen2.5-7B-Instruct", model, hardware: h100, contextSize: 8192, maxContext: 8192 })).checks.some((c) => c.param === "max_context")).toBe(false);
    expect(checkStack(plan({ model, contextSize: 65_536 })).checks.some((c) => c.param === "max_context")).toBe(false);
  });

  it("fails a model the machine says it cannot use at its path, at the model's field", () => {
    const r = checkStack(plan({ modelRef: "/models/gone.gguf", modelFileProblem: "There is no file at /models/gone.gguf on this machine." }));
    expect(r.ok).toBe(false);
    expect(r.checks.filter((c) => c.level === "fail")).toEqual([{ topic: "format", param: "model", level: "fail", message: "There is no file at /models/gone.gguf on this machine." }]);
    expect(refusalReasons(r)).toBe("There is no file at /models/gone.gguf on this machine.");
    // Said instead of "a GGUF file", and nothing left to size.
    expect(r.checks.map((c) => [c.topic, c.level])).toEqual([
      ["runtime", "ok"],
      ["format", "fail"],
      ["endpoint", "ok"],
    ]);
    // A name that is wrong for the runtime is said too.
    expect(checkStack(plan({ modelRef: "/models/gone", modelFileProblem: "There is no file at /models/gone on this machine." })).checks.filter((c) => c.level === "fail")).toHaveLength(2);
  });

  it("judges no model before one is given: no verdict, only what is chosen, and a runtime that cannot run still fails", () => {
    const r = checkStack(plan({ modelRef: "" }));
    expect(r.ok).toBeNull();
    expect(r.checks.map((c) => [c.topic, c.level])).toEqual([
      ["runtime", "ok"],
      ["endpoint", "ok"],
    ]);
    expect(checkStack(plan({ modelRef: " ", runtime: "mlx" })).ok).toBe(false);
  });

  it("warns that a stack without an Endpoint is not reachable, and refuses layers its runtime cannot run", () => {
    expect(checkStack(plan({ hasEndpoint: false })).checks.at(-1)).toEqual({ topic: "endpoint", param: "endpoint", level: "warn", message: "No Endpoint layer: the stack runs, but no API request can reach it." });
    expect(checkStack(plan({ harness: "tools" })).checks).toContainEqual({ topic: "layers", param: "harness", level: "ok", message: "The tools harness runs on gguf." });
    expect(checkStack(plan({ runtime: "mlx", harness: "tools" })).checks).toContainEqual({ topic: "layers", param: "harness", level: "fail", message: "The tools harness does not run on the mlx runtime yet." });
    expect(checkStack(plan({ runtime: "mlx", orchestrator: "swarm" })).checks).toContainEqual(expect.objectContaining({ param: "orchestrator", level: "fail" }));
    expect(refusalReasons(checkStack(plan({ orchestrator: "swarm" })))).toBe("Unknown orchestrator 'swarm'; the kinds are refine, vote.");
  });

  it("sizes the KV cache from the architecture: K and V in f16 for every layer's key-value heads", () => {
    expect(kvBytesPerToken(32, 8, 128)).toBe(131_072);
  });
});

describe("a stack's model id when none is given", () => {
  it("is the model file's name, written as a model id may be", () => {
    expect(defaultModelId("hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf")).toBe("qwen2.5-0.5b-instruct-q4_k_m");
    expect(defaultModelId("/models/My Model (v2).gguf")).toBe("My-Model--v2-");
    expect(defaultModelId("/models/--odd'name.gguf")).toBe("odd-name");
    expect(defaultModelId("Qwen/Qwen2.5-7B-Instruct")).toBe("Qwen2.5-7B-Instruct");
  });
});

describe("what a stack serves", () => {
  const serves = (p: Partial<StackPlan>) => {
    const result = checkStack(plan(p));
    return [result.serves, result.checks.find((c) => c.topic === "endpoint")!.message];
  };
  it("says chat and embeddings for GGUF, and rerank too for vLLM and OpenAI-compatible servers (passed through); chat only for MLX and behind an orchestrator", () => {
    expect(serves({ runtime: "gguf" })).toEqual([["chat", "embeddings"], "Reachable through the API as its model id, for chat and embeddings (embeddings from the model's own embedding context)."]);
    expect(serves({ runtime: "vllm", hardware: h100 })).toEqual([["chat", "embeddings", "rerank"], "Reachable through the API as its model id, for chat, embeddings and rerank (passed to its server: what its model does not serve, the server refuses)."]);
    expect(serves({ runtime: "openai" })[0]).toEqual(["chat", "embeddings", "rerank"]);
    expect(serves({ runtime: "mlx", hardware: mac })).toEqual([["chat"], "Reachable through the API as its model id, for chat only (the mlx runtime has no embeddings)."]);
    expect(serves({ runtime: "gguf", orchestrator: "vote" })).toEqual([["chat"], "Reachable through the API as its model id, for chat only (the vote orchestrator answers chats only)."]);
    expect(serves({ runtime: "gguf", harness: "tools" })[0]).toEqual(["chat", "embeddings"]);
  });

  it("says a reranker answers rerank only (GGUF by its header, vLLM passed through), and that no request reaches one behind an orchestrator or on MLX", () => {
    const reranker = { weightsBytes: 600 * 1024 ** 2, kvBytesPerToken: 1024, trainContextSize: 8192, rankingModel: true, source: "gguf-header" as const };
    expect(serves({ runtime: "gguf", model: reranker })).toEqual([["rerank"], "Reachable through the API as its model id, for rerank only (a reranker: chat and embeddings requests are refused)."]);
    expect(serves({ runtime: "vllm", hardware: h100, model: reranker })[0]).toEqual(["rerank"]);
    const behind = checkStack(plan({ runtime: "gguf", model: reranker, orchestrator: "vote" }));
    expect([behind.ok, behind.serves]).toEqual([false, []]);
    expect(behind.checks.find((c) => c.topic === "endpoint")!.message).toBe("A reranker answers rerank requests only, and the vote orchestrator answers chats only: no request could reach it.");
    expect(checkStack(plan({ runtime: "mlx", hardware: mac, model: reranker })).checks.find((c) => c.topic === "endpoint")!.message).toBe("A reranker answers rerank requests only, and the mlx runtime has no rerank: no request could reach it.");
  });
});

describe("a stack against its machine's memory budget", () => {
  const ref = "hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf";
  const MiB = 1024 ** 2;
  type Counted = NonNullable<StackPlan["budget"]>["stacks"][number];
  const fixed: Counted = { stackId: "stk_fixed", name: "fixed", bytes: 300 * MiB, residency: "always", loaded: true };
  const chat: Counted = { stackId: "stk_chat", name: "chat", bytes: 500 * MiB, residency: "on_demand", loaded: true };
  // The machine's agent said: a budget, an always stack of 300 MiB loaded, and an on-demand one of 500 MiB.
  const budgetOf = (budgetBytes: number, stacks: Counted[] = [fixed, chat], maxLoaded = 0) => ({ budgetBytes, maxLoaded, stacks });
  const said = (p: Partial<StackPlan>) => {
    const r = checkStack(plan({ modelRef: ref, model: catalog(ref), ...p }));
    return { ok: r.ok, budget: r.checks.filter((c) => c.topic === "memory").slice(1).map((c) => [c.level, c.message]) };
  };
  const words = (n: string) => `this machine's memory budget (${n}, its agent's --memory-budget)`;

  it("refuses an on-demand stack larger than the whole budget, warns of one that cannot load beside the always-loaded stacks, and says what it shares the rest with", () => {
    // 770 MiB: not beside the others, but idle on-demand models are unloaded for it.
    expect(said({ residency: "on_demand", budget: budgetOf(2 * GiB) })).toEqual({
      ok: true,
      budget: [["ok", `Loaded on demand, it fits ${words("2 GiB")} beside the 300 MiB its always-loaded stacks hold (fixed (300 MiB)). It shares the rest with chat (500 MiB): idle on-demand models are unloaded when it needs their room, least recently used first, never one serving a request.`]],
    });
    // Its own count is not one of the others; an always stack that is not loaded (failed) holds nothing.
    expect(said({ residency: "on_demand", stackId: "stk_chat", budget: budgetOf(2 * GiB, [{ ...fixed, loaded: false }, chat]) }).budget).toEqual([["ok", `Loaded on demand, it fits ${words("2 GiB")}.`]]);
    // Beside 300 MiB always loaded, 1 GiB leaves too little: said (the machine judges, on what it holds then).
    expect(said({ residency: "on_demand", budget: budgetOf(GiB) })).toEqual({
      ok: true,
      budget: [["warn", `Loaded on demand: it needs about 770 MiB beside the 300 MiB its always-loaded stacks hold (fixed (300 MiB)), more than ${words("1 GiB")}, so the machine would refuse to load it while they are loaded.`]],
    });
    expect(said({ residency: "on_demand", budget: budgetOf(512 * MiB) }).budget).toEqual([["fail", `Loaded on demand, it needs about 770 MiB, more than ${words("512 MiB")}: it could never be loaded.`]]);
    // --max-loaded 1, held by the always stack.
    expect(said({ residency: "on_demand", budget: budgetOf(8 * GiB, [fixed, chat], 1) }).budget).toEqual([
      ["warn", "Loaded on demand: the machine keeps at most 1 loaded (its agent's --max-loaded), and its always-loaded stacks (fixed (300 MiB)) take that place, so the machine would refuse to load it while they are loaded."],
    ]);
  });

  it("warns when an always stack does not fit beside the always-loaded ones (the machine judges it), and says nothing without a budget", () => {
    expect(said({ residency: "always", budget: budgetOf(GiB) })).toEqual({
      ok: true,
      budget: [["warn", `Always loaded: it needs about 770 MiB beside the 300 MiB its always-loaded stacks hold (fixed (300 MiB)), more than ${words("1 GiB")}, so the machine would refuse its deploy while they are loaded.`]],
    });
    expect(said({ residency: "always", budget: budgetOf(2 * GiB) }).budget[0]![1]).toBe(
      `Always loaded, it fits ${words("2 GiB")} beside the 300 MiB its always-loaded stacks hold (fixed (300 MiB)). It shares the rest with chat (500 MiB): idle on-demand models are unloaded when it needs their room, least recently used first, never one serving a request.`,
    );
    // Nothing on demand beside it: nothing more to say.
    expect(said({ residency: "always", budget: budgetOf(2 * GiB, [fixed]) }).budget).toEqual([]);
    expect(said({ residency: "on_demand", budget: null }).budget).toEqual([]);
    expect(said({ residency: "on_demand", budget: budgetOf(0, []) }).budget).toEqual([]);
  });

  it("names five stacks at most", () => {
    const many = Array.from({ length: 7 }, (_, i): Counted => ({ stackId: `stk_${i}`, name: `m${i}`, bytes: 0, residency: "on_demand", loaded: false }));
    expect(said({ residency: "on_demand", budget: budgetOf(2 * GiB, many) }).budget[0]![1]).toContain("It shares the rest with m0, m1, m2, m3, m4 and 2 more: idle");
  });

  it("counts a vLLM stack as the 90% of its GPU vLLM takes, as the agent does", () => {
    const vllm = checkStack(plan({ runtime: "vllm", modelRef: "Qwen/Qwen2.5-7B-Instruct", hardware: h100, residency: "on_demand", budget: { budgetBytes: 60 * GiB, maxLoaded: 0, stacks: [] } }));
    expect(refusalReasons(vllm)).toBe(`Loaded on demand, it needs about 72 GiB, more than ${words("60 GiB")}: it could never be loaded.`);
  });
});
