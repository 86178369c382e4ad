import type { HardwareReport } from "../../proto/index.js";

/** `--memory-budget` as given: a share of the machine's memory, or bytes. */
export type MemoryBudget = { percent: number } | { bytes: number };

const UNITS: Record<string, number> = { "": 1, b: 1, k: 1e3, kb: 1e3, kib: 1024, m: 1e6, mb: 1e6, mib: 1024 ** 2, g: 1e9, gb: 1e9, gib: 1024 ** 3, t: 1e12, tb: 1e12, tib: 1024 ** 4 };

/** Reads `90%`, `12884901888`, `12GiB`, `512 MiB`; undefined when it is none of these (or 0). */
export function parseMemoryBudget(text: string): MemoryBudget | undefined {
  const percent = /^\s*(\d+(?:\.\d+)?)\s*%\s*$/.exec(text);
  if (percent) {
    const n = Number(percent[1]);
    return n > 0 && n <= 100 ? { percent: n } : undefined;
  }
  const sized = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  const unit = sized ? UNITS[sized[2]!.toLowerCase()] : undefined;
  if (!sized || unit === undefined) return undefined;
  const bytes = Math.round(Number(sized[1]) * unit);
  return bytes > 0 ? { bytes } : undefined;
}

/**
 * The memory the machine's runtimes load models into: its GPUs' memory together where it has dedicated GPU memory
 * (a GPU backend usable, each GPU's size known), else its RAM (a Mac's unified memory, or a machine without GPU).
 */
export function modelMemoryBytes(hardware: HardwareReport): number {
  const dedicated = hardware.platform !== "darwin" && hardware.accelerators.length > 0 && hardware.gpus.length > 0 && hardware.gpus.every((g) => g.vramBytes > 0);
  return dedicated ? hardware.gpus.reduce((sum, g) => sum + g.vramBytes, 0) : hardware.memoryBytes;
}

/** The budget in bytes on this machine. */
export function budgetBytes(budget: MemoryBudget, hardware: HardwareReport): number {
  return "bytes" in budget ? budget.bytes : Math.floor((modelMemoryBytes(hardware) * budget.percent) / 100);
}
