import { arch, cpus, platform, totalmem } from "node:os";
import si from "systeminformation";
import type { HardwareReport, Logger } from "../../proto/index.js";

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
 * Detects the machine's hardware with systeminformation. Each probe is bounded
 * in time and a failing one falls back to what Node itself knows.
 */
export async function detectHardware(options: { log?: Logger; timeoutMs?: number } = {}): Promise<HardwareDetection> {
  const problems: string[] = [];
  const t = options.timeoutMs ?? 10_000;
  const [os, cpu, mem, graphics, disks] = await Promise.all([
    probe("os", () => si.osInfo(), null, problems, t),
    probe("cpu", () => si.cpu(), null, problems, t),
    probe("memory", () => si.mem(), null, problems, t),
    probe("gpu", () => si.graphics(), null, problems, t),
    probe("disk", () => si.fsSize(), [], problems, t),
  ]);
  for (const p of problems) options.log?.warn("hardware probe failed", { problem: p });
  const report: HardwareReport = {
    platform: platform(),
    os: os ? `${os.distro} ${os.release}`.trim() : platform(),
    arch: arch(),
    cpuModel: cpu ? `${cpu.manufacturer} ${cpu.brand}`.trim() : (cpus()[0]?.model ?? "unknown"),
    cpuPhysicalCores: cpu?.physicalCores ?? cpus().length,
    cpuLogicalCores: cpu?.cores ?? cpus().length,
    memoryBytes: mem?.total ?? totalmem(),
    gpus: (graphics?.controllers ?? [])
      .filter((c) => c.model || c.vendor)
      .map((c) => ({ vendor: c.vendor ?? "", model: c.model ?? "", vramBytes: Math.max(0, (c.vram ?? 0) * 1024 * 1024), driverVersion: c.driverVersion ?? "" })),
    disks: disks.map((d) => ({ mount: d.mount, sizeBytes: Math.max(0, d.size), freeBytes: Math.max(0, d.available) })),
  };
  return { report, problems };
}
