import type { HardwareSummary, RuntimeKind } from "../store/index.js";

/** One line of the compatibility panel. */
export interface CompatibilityCheck {
  level: "ok" | "warn" | "fail";
  message: string;
}

/** Whether a runtime can run on a machine; `ok` is null while the machine has never reported its hardware. */
export interface Compatibility {
  ok: boolean | null;
  checks: CompatibilityCheck[];
}

/** Checks a stack's runtime against the hardware its machine reported. */
export function checkCompatibility(runtime: RuntimeKind, hardware: HardwareSummary | null): Compatibility {
  if (!hardware) return { ok: null, checks: [{ level: "warn", message: "The machine has not connected yet, so its hardware is unknown." }] };
  const checks: CompatibilityCheck[] = [];
  const nvidia = hardware.gpus.some((g) => /nvidia/i.test(g.vendor));
  switch (runtime) {
    case "gguf":
      checks.push({ level: "ok", message: `GGUF runs on ${hardware.platform}/${hardware.arch}${hardware.gpus.length ? " with GPU offload where supported" : " on the CPU"}.` });
      break;
    case "vllm":
      if (hardware.platform !== "linux") checks.push({ level: "fail", message: "vLLM needs Linux." });
      if (!nvidia) checks.push({ level: "fail", message: "vLLM needs an NVIDIA GPU; none was detected on this machine." });
      if (hardware.platform === "linux" && nvidia) checks.push({ level: "ok", message: "Linux with an NVIDIA GPU: vLLM can run." });
      break;
    case "mlx":
      if (hardware.platform === "darwin" && hardware.arch === "arm64") checks.push({ level: "ok", message: "Apple silicon: MLX can run." });
      else checks.push({ level: "fail", message: "MLX needs macOS on Apple silicon." });
      break;
    case "openai":
      checks.push({ level: "ok", message: "An OpenAI-compatible server already running on the machine is used as it is." });
      break;
  }
  return { ok: !checks.some((c) => c.level === "fail"), checks };
}
