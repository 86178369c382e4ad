import { runProbe } from "./run-probe.js";

/** One NVIDIA GPU as `nvidia-smi` reports it. */
export interface NvidiaSmiGpu {
  name: string;
  /** MiB. */
  memoryTotal: number;
  driverVersion: string;
  busId: string;
  /** MiB in use now. */
  memoryUsed: number;
  /** Percent of the last sample period the GPU was busy; -1 when it does not say (`[N/A]`). */
  utilization: number;
}

/** The fields systeminformation asks for, in its order, so recorded answers replay as they are. */
const FIELDS = "driver_version,pci.sub_device_id,name,pci.bus_id,fan.speed,memory.total,memory.used,memory.free,utilization.gpu,utilization.memory,temperature.gpu,temperature.memory,power.draw,power.limit,clocks.gr,clocks.mem";

/** Parses `nvidia-smi --query-gpu=<FIELDS> --format=csv,noheader,nounits`. */
export function parseNvidiaSmi(csv: string): NvidiaSmiGpu[] {
  return csv
    .split(/\r?\n/)
    .map((line) => line.split(",").map((f) => f.trim()))
    .filter((f) => f.length >= 6 && f[2])
    .map((f) => ({ driverVersion: f[0]!, name: f[2]!, busId: f[3]!, memoryTotal: Number(f[5]) || 0, memoryUsed: Number(f[6]) || 0, utilization: percent(f[8]) }));
}

/** A percent field: a number from 0 to 100, or -1 for `[N/A]`, `[Not Supported]` and anything else. */
function percent(field: string | undefined): number {
  const n = field === undefined || field === "" ? NaN : Number(field);
  return Number.isFinite(n) && n >= 0 && n <= 100 ? n : -1;
}

/**
 * Asks `nvidia-smi` for the NVIDIA GPUs, their memory and driver. Null when it
 * is not installed or does not answer (no driver loaded): then nothing is known
 * from it. systeminformation asks it only after finding the GPU with `lspci`, so
 * on a machine without `lspci` (many minimal server images) it never does.
 */
export async function queryNvidiaSmi(options: { env?: NodeJS.ProcessEnv; timeoutMs?: number; signal?: AbortSignal } = {}): Promise<NvidiaSmiGpu[] | null> {
  const stdout = await runProbe("nvidia-smi", [`--query-gpu=${FIELDS}`, "--format=csv,noheader,nounits"], { env: options.env, timeoutMs: options.timeoutMs ?? 5000, signal: options.signal });
  const gpus = stdout === null ? [] : parseNvidiaSmi(stdout);
  return gpus.length ? gpus : null;
}
