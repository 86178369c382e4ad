import { cpus, freemem, platform, totalmem } from "node:os";
import type { GpuLoad, MachineLoad } from "../../proto/index.js";
import { queryNvidiaSmi } from "./nvidia-smi.js";
import { runProbe } from "./run-probe.js";

const MIB = 1024 * 1024;

/** Where a load sample's figures come from: the real machine in production, stand-ins in tests. */
export interface LoadSource {
  /** CPU time so far, summed over every logical CPU, ms: idle and in all. */
  cpuTimes(): { idle: number; total: number };
  memory(): { totalBytes: number; freeBytes: number };
  /** Each GPU's load now; null when no tool answers (no GPU, no driver, no tool). */
  gpus(signal: AbortSignal): Promise<GpuLoad[] | null>;
}

/** The real machine: Node for CPU and memory, `nvidia-smi` for GPUs (on macOS, `ioreg` for the Apple GPU). */
export function systemLoadSource(): LoadSource {
  return {
    cpuTimes: () => {
      let idle = 0;
      let total = 0;
      for (const c of cpus()) {
        idle += c.times.idle;
        total += c.times.user + c.times.nice + c.times.sys + c.times.idle + c.times.irq;
      }
      return { idle, total };
    },
    // libuv's free memory is the kernel's MemAvailable on Linux: what can be had without swapping.
    memory: () => ({ totalBytes: totalmem(), freeBytes: freemem() }),
    gpus: (signal) => (platform() === "darwin" ? queryAppleGpu(signal) : queryNvidiaGpus(signal)),
  };
}

/** NVIDIA GPUs' load from `nvidia-smi` (the same query as the hardware probe, so recorded answers replay). */
export async function queryNvidiaGpus(signal: AbortSignal, env?: NodeJS.ProcessEnv): Promise<GpuLoad[] | null> {
  const gpus = await queryNvidiaSmi({ env, signal, timeoutMs: 4000 });
  return gpus?.map((g, index) => ({ index, name: g.name, utilizationPercent: g.utilization, memoryUsedBytes: g.memoryUsed * MIB, memoryTotalBytes: g.memoryTotal * MIB })) ?? null;
}

/**
 * The Apple GPU's load from `ioreg -r -d 1 -w 0 -c IOAccelerator`: each accelerator's `PerformanceStatistics`
 * gives `Device Utilization %` and `In use system memory` (bytes; the memory is the system's, so its total is 0).
 */
export function parseIoregAccelerators(text: string): GpuLoad[] {
  const gpus: GpuLoad[] = [];
  // One accelerator per `+-o` entry.
  for (const entry of text.split(/^\+-o /m).slice(1)) {
    const stats = /"PerformanceStatistics"\s*=\s*\{([^}]*)\}/.exec(entry)?.[1];
    if (stats === undefined) continue;
    const field = (name: string) => {
      const m = new RegExp(`"${name}"=(\\d+)`).exec(stats);
      return m ? Number(m[1]) : undefined;
    };
    const utilization = field("Device Utilization %");
    gpus.push({
      index: gpus.length,
      name: /"model"\s*=\s*"([^"]*)"/.exec(entry)?.[1] ?? "Apple GPU",
      utilizationPercent: utilization !== undefined && utilization <= 100 ? utilization : -1,
      memoryUsedBytes: field("In use system memory") ?? 0,
      memoryTotalBytes: 0,
    });
  }
  return gpus;
}

async function queryAppleGpu(signal: AbortSignal): Promise<GpuLoad[] | null> {
  const stdout = await runProbe("ioreg", ["-r", "-d", "1", "-w", "0", "-c", "IOAccelerator"], { timeoutMs: 4000, signal, maxBuffer: 4 * MIB });
  const gpus = stdout === null ? [] : parseIoregAccelerators(stdout);
  return gpus.length ? gpus : null;
}

/** After a GPU tool did not answer, how long before it is asked again (a machine without one is not asked every few seconds). */
const GPU_RETRY_MS = 60_000;

/**
 * Samples how hard the machine works: CPU busy since the previous sample, memory in use, and each GPU's
 * utilization and memory. A GPU tool that did not answer is asked again a minute later, not at every sample.
 */
export class LoadSampler {
  private last: { idle: number; total: number };
  private gpusAgainAt = 0;

  constructor(
    private readonly source: LoadSource = systemLoadSource(),
    private readonly now: () => number = Date.now,
  ) {
    this.last = source.cpuTimes();
  }

  async sample(signal: AbortSignal): Promise<MachineLoad> {
    let gpus: GpuLoad[] = [];
    if (this.now() >= this.gpusAgainAt) {
      const answer = await this.source.gpus(signal);
      if (answer) gpus = answer;
      else this.gpusAgainAt = this.now() + GPU_RETRY_MS;
    }
    const times = this.source.cpuTimes();
    const total = times.total - this.last.total;
    const busy = total - (times.idle - this.last.idle);
    this.last = times;
    const memory = this.source.memory();
    return {
      sampledAtMs: this.now(),
      cpuPercent: total > 0 ? Math.round(Math.min(100, Math.max(0, (busy / total) * 100)) * 10) / 10 : 0,
      memoryUsedBytes: Math.max(0, memory.totalBytes - memory.freeBytes),
      memoryTotalBytes: memory.totalBytes,
      gpus,
    };
  }
}
