import type { MachineLoad } from "../../proto/index.js";

/** A machine's latest load, as this relay received it. */
export interface ReceivedLoad {
  load: MachineLoad;
  /** This relay's clock when it came, Unix ms (the agent's own clock may be off). */
  receivedAt: number;
}

/** At most this many GPUs of one machine are kept. */
const MAX_GPUS = 64;
/** A GPU's name is cut to this. */
const MAX_NAME_CHARS = 200;
/** One report a second per machine is kept; more are dropped. */
const MIN_INTERVAL_MS = 1000;

const count = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0);
const percent = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.min(100, Math.round(v * 10) / 10) : -1);

/**
 * A load as reported (by an agent, or another relay), made safe to show: a bounded list of GPUs with bounded
 * names, counts whole and not negative, percents from 0 to 100 (-1: unknown). Anything not of the right type
 * counts as unknown.
 */
export function cleanLoad(load: MachineLoad): MachineLoad {
  const gpus = Array.isArray(load.gpus) ? load.gpus : [];
  return {
    sampledAtMs: count(load.sampledAtMs),
    cpuPercent: Math.max(0, percent(load.cpuPercent)),
    memoryUsedBytes: count(load.memoryUsedBytes),
    memoryTotalBytes: count(load.memoryTotalBytes),
    gpus: gpus.slice(0, MAX_GPUS).map((g, i) => ({
      index: Number.isInteger(g?.index) && g.index >= 0 ? g.index : i,
      name: typeof g?.name === "string" ? g.name.slice(0, MAX_NAME_CHARS) : "",
      utilizationPercent: percent(g?.utilizationPercent),
      memoryUsedBytes: count(g?.memoryUsedBytes),
      memoryTotalBytes: count(g?.memoryTotalBytes),
    })),
  };
}

/**
 * The latest load (CPU, memory, GPUs) each machine linked to this relay reported, for the overview. Kept in
 * memory only: a machine's load is what it says every few seconds, and it goes when its link does.
 */
export class MachineLoads {
  private readonly loads = new Map<string, ReceivedLoad>();

  constructor(private readonly now: () => number = Date.now) {}

  /** A machine's report (at most one a second is kept). */
  reported(machineId: string, load: MachineLoad): void {
    const at = this.now();
    const last = this.loads.get(machineId);
    if (last && at - last.receivedAt < MIN_INTERVAL_MS) return;
    this.loads.set(machineId, { load: cleanLoad(load), receivedAt: at });
  }

  /** The machine's link is gone: its load is unknown. */
  gone(machineId: string): void {
    this.loads.delete(machineId);
  }

  get(machineId: string): ReceivedLoad | undefined {
    return this.loads.get(machineId);
  }
}
