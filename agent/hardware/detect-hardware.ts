import { arch, cpus, platform, totalmem } from "node:os";
import type { HardwareReport, Logger } from "../../proto/index.js";
import { queryNvidiaSmi, type NvidiaSmiGpu } from "./nvidia-smi.js";

/** One GPU as systeminformation reports it (the fields Makina reads). */
export interface GraphicsController {
  vendor?: string;
  /** On Linux the PCI device name from lspci ("GA100 [A100 SXM4 80GB]"); on macOS the chip ("Apple M2 Max"). */
  model?: string;
  /** The product name nvidia-smi gives ("NVIDIA A100-SXM4-80GB"), when the NVIDIA driver answers. */
  name?: string;
  /** MiB. On Linux, without a driver to ask, the largest PCI memory window, which is not the VRAM. */
  vram?: number | null;
  /** MiB, from nvidia-smi. */
  memoryTotal?: number;
  driverVersion?: string;
}

/** A GPU for the report: nvidia-smi's name and memory win; an NVIDIA GPU without them has unknown VRAM (0). */
function gpuOf(c: GraphicsController): HardwareReport["gpus"][number] {
  const nvidia = /nvidia/i.test(c.vendor ?? "");
  const mib = c.memoryTotal ?? (nvidia ? 0 : (c.vram ?? 0));
  return { vendor: c.vendor ?? "", model: c.name || c.model || "", vramBytes: Math.max(0, mib) * 1024 * 1024, driverVersion: c.driverVersion ?? "" };
}

/**
 * Completes the NVIDIA GPUs systeminformation found with what nvidia-smi says
 * (product name, memory, driver), in order; GPUs only nvidia-smi knows are added.
 */
function withNvidiaSmi(controllers: GraphicsController[], smi: NvidiaSmiGpu[] | null): GraphicsController[] {
  if (!smi?.length) return controllers;
  const rows = [...smi];
  const merged = controllers.map((c) => {
    if (!/nvidia/i.test(c.vendor ?? "") || c.memoryTotal) return c;
    const row = rows.shift();
    return row ? { ...c, name: row.name, memoryTotal: row.memoryTotal, driverVersion: row.driverVersion } : c;
  });
  const known = controllers.filter((c) => /nvidia/i.test(c.vendor ?? "") && c.memoryTotal).length;
  for (const row of rows.slice(known)) merged.push({ vendor: "NVIDIA", name: row.name, model: row.name, memoryTotal: row.memoryTotal, driverVersion: row.driverVersion });
  return merged;
}

/** Where hardware facts come from: systeminformation and node-llama-cpp in production, recorded fixtures in tests. */
export interface HardwareSource {
  platform: string;
  arch: string;
  osInfo(): Promise<{ distro: string; release: string }>;
  cpu(): Promise<{ manufacturer: string; brand: string; physicalCores: number; cores: number }>;
  mem(): Promise<{ total: number }>;
  graphics(): Promise<{ controllers: GraphicsController[] }>;
  fsSize(): Promise<{ mount: string; size: number; available: number }[]>;
  /** GPU backends llama.cpp can use here. */
  gpuBackends(): Promise<string[]>;
  /** NVIDIA GPUs as nvidia-smi reports them; null when it does not answer. */
  nvidiaSmi(): Promise<NvidiaSmiGpu[] | null>;
}

/** The real machine: systeminformation for the hardware, node-llama-cpp for usable GPU backends. */
export async function systemHardwareSource(): Promise<HardwareSource> {
  const si = (await import("systeminformation")).default;
  return {
    platform: platform(),
    arch: arch(),
    osInfo: () => si.osInfo(),
    cpu: () => si.cpu(),
    mem: () => si.mem(),
    graphics: () => si.graphics(),
    fsSize: () => si.fsSize(),
    gpuBackends: async () => {
      const { getLlamaGpuTypes } = await import("node-llama-cpp");
      return (await getLlamaGpuTypes("supported")).filter((t): t is Exclude<typeof t, false> => t !== false);
    },
    nvidiaSmi: async () => (platform() === "darwin" ? null : queryNvidiaSmi()),
  };
}

/** What a hardware probe found, plus the probes that failed (shown by `doctor`, never fatal). */
export interface HardwareDetection {
  report: HardwareReport;
  problems: string[];
}

async function probe<T>(name: string, run: () => Promise<T>, fallback: T, problems: string[], timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      run(),
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs))),
    ]);
  } catch (err) {
    problems.push(`${name} probe failed: ${(err as Error).message}`);
    return fallback;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Detects the machine's hardware. Each probe is bounded in time; a failing one
 * falls back to what Node itself knows and is listed in `problems`.
 */
export async function detectHardware(options: { source?: HardwareSource; log?: Logger; timeoutMs?: number } = {}): Promise<HardwareDetection> {
  const problems: string[] = [];
  const t = options.timeoutMs ?? 10_000;
  const source = options.source ?? (await systemHardwareSource());
  const [os, cpu, mem, graphics, disks, backends, smi] = await Promise.all([
    probe("os", () => source.osInfo(), null, problems, t),
    probe("cpu", () => source.cpu(), null, problems, t),
    probe("memory", () => source.mem(), null, problems, t),
    probe("gpu", () => source.graphics(), null, problems, t),
    probe("disk", () => source.fsSize(), [], problems, t),
    probe("gpu backend", () => source.gpuBackends(), [], problems, t),
    // No answer from nvidia-smi is normal (no NVIDIA GPU, or no driver): not a problem to report.
    probe("nvidia-smi", () => source.nvidiaSmi(), null, [], t),
  ]);
  for (const p of problems) options.log?.warn("hardware probe failed", { problem: p });
  const report: HardwareReport = {
    platform: source.platform,
    os: os ? `${os.distro} ${os.release}`.trim() : source.platform,
    arch: source.arch,
    cpuModel: cpu ? `${cpu.manufacturer} ${cpu.brand}`.trim() : (cpus()[0]?.model ?? "unknown"),
    cpuPhysicalCores: cpu?.physicalCores ?? cpus().length,
    cpuLogicalCores: cpu?.cores ?? cpus().length,
    memoryBytes: mem?.total ?? totalmem(),
    gpus: withNvidiaSmi((graphics?.controllers ?? []).filter((c) => c.model || c.vendor), smi).map(gpuOf),
    disks: disks.map((d) => ({ mount: d.mount, sizeBytes: Math.max(0, d.size), freeBytes: Math.max(0, d.available) })),
    accelerators: backends ?? [],
  };
  return { report, problems };
}

/** Whether two reports differ in a way worth telling the relay (free disk space counts per whole GiB). */
export function hardwareChanged(a: HardwareReport, b: HardwareReport): boolean {
  const gib = (r: HardwareReport) => ({ ...r, disks: r.disks.map((d) => ({ ...d, freeBytes: Math.floor(d.freeBytes / 2 ** 30) })) });
  return JSON.stringify(gib(a)) !== JSON.stringify(gib(b));
}
