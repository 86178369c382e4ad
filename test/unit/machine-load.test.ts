import { describe, expect, it } from "vitest";
import { parseIoregAccelerators, queryNvidiaGpus, LoadSampler, type LoadSource } from "../../agent/hardware/machine-load.js";
import { parseNvidiaSmi } from "../../agent/hardware/nvidia-smi.js";
import { cleanLoad, MachineLoads } from "../../relay/link/index.js";
import { readLoadsReply, readLoadsRequest } from "../../relay/cluster/hop-messages.js";
import type { GpuLoad, MachineLoad } from "../../proto/index.js";
import { join } from "node:path";
import { SHARED_HARDWARE, standinNvidiaSmiEnv } from "../helpers/hardware-fixtures.js";

const MIB = 1024 * 1024;

/**
 * What `ioreg -r -d 1 -w 0 -c IOAccelerator` prints on an Apple-silicon Mac, in its layout (written for this
 * test, as no Mac is reachable here): one `+-o` entry per accelerator, its `PerformanceStatistics` on one line.
 */
const IOREG = `+-o AGXAcceleratorG14X  <class AGXAcceleratorG14X, id 0x1000004c2, registered, matched, active, busy 0 (0 ms), retain 60>
    {
      "IOClass" = "AGXAcceleratorG14X"
      "model" = "Apple M2 Max"
      "gpu-core-count" = 38
      "PerformanceStatistics" = {"In use system memory (driver)"=0,"Alloc system memory"=5180424192,"Tiler Utilization %"=12,"Renderer Utilization %"=10,"Device Utilization %"=14,"In use system memory"=1094434816}
    }
`;

describe("a machine's load", () => {
  it("reads each NVIDIA GPU's memory in use and utilization from nvidia-smi, [N/A] as unknown", () => {
    const line = "580.159.04, 0x16C110DE, NVIDIA H100 80GB HBM3, 00000000:00:06.0, [N/A], 81559, 2048, 79511, 37, 5, 54, 56, 80.71, 700.00, 345, 2619";
    expect(parseNvidiaSmi(`${line}\n${line.replace(", 37,", ", [N/A],")}\n`)).toEqual([
      { driverVersion: "580.159.04", name: "NVIDIA H100 80GB HBM3", busId: "00000000:00:06.0", memoryTotal: 81559, memoryUsed: 2048, utilization: 37 },
      { driverVersion: "580.159.04", name: "NVIDIA H100 80GB HBM3", busId: "00000000:00:06.0", memoryTotal: 81559, memoryUsed: 2048, utilization: -1 },
    ]);
  });

  it("asks nvidia-smi (the stand-in replaying the recorded H100) for GPU loads in bytes, and gets null without a driver", async () => {
    const signal = new AbortController().signal;
    expect(await queryNvidiaGpus(signal, standinNvidiaSmiEnv(join(SHARED_HARDWARE, "nvidia-h100.nvidia-smi.csv")))).toEqual([
      { index: 0, name: "NVIDIA H100 80GB HBM3", utilizationPercent: 0, memoryUsedBytes: 0, memoryTotalBytes: 81559 * MIB },
    ]);
    expect(await queryNvidiaGpus(signal, standinNvidiaSmiEnv(null))).toBeNull();
  });

  it("reads the Apple GPU's utilization and memory in use from ioreg, its memory shared (total 0)", () => {
    expect(parseIoregAccelerators(IOREG)).toEqual([{ index: 0, name: "Apple M2 Max", utilizationPercent: 14, memoryUsedBytes: 1094434816, memoryTotalBytes: 0 }]);
    expect(parseIoregAccelerators("")).toEqual([]);
    expect(parseIoregAccelerators(IOREG.replace(/"Device Utilization %"=14,/, ""))[0]!.utilizationPercent).toBe(-1);
  });

  it("samples CPU busy since the last sample and memory in use, and asks a GPU tool that failed again only a minute later", async () => {
    let now = 1_000_000;
    const times = [
      { idle: 1000, total: 2000 },
      { idle: 1300, total: 3000 },
      { idle: 1300, total: 3000 },
    ];
    let gpuCalls = 0;
    let gpus: GpuLoad[] | null = null;
    const source: LoadSource = {
      cpuTimes: () => times.shift() ?? { idle: 2300, total: 4000 },
      memory: () => ({ totalBytes: 16 * 1024 * MIB, freeBytes: 4 * 1024 * MIB }),
      gpus: async () => {
        gpuCalls++;
        return gpus;
      },
    };
    const sampler = new LoadSampler(source, () => now);
    const signal = new AbortController().signal;
    const first = await sampler.sample(signal);
    // 1000 ms of CPU time, 300 of it idle.
    expect(first).toEqual({ sampledAtMs: now, cpuPercent: 70, memoryUsedBytes: 12 * 1024 * MIB, memoryTotalBytes: 16 * 1024 * MIB, gpus: [] });
    // No CPU time passed: 0, not a division by zero.
    expect((await sampler.sample(signal)).cpuPercent).toBe(0);
    expect(gpuCalls).toBe(1);
    gpus = [{ index: 0, name: "GPU", utilizationPercent: 5, memoryUsedBytes: 1, memoryTotalBytes: 2 }];
    now += 59_000;
    expect((await sampler.sample(signal)).gpus).toEqual([]);
    expect(gpuCalls).toBe(1);
    now += 1_000;
    expect((await sampler.sample(signal)).gpus).toEqual(gpus);
    expect(gpuCalls).toBe(2);
  });

  it("is made safe to show on the relay: bounded, whole, percents from 0 to 100 or unknown, one report a second", () => {
    const wild = {
      sampledAtMs: -5,
      cpuPercent: 250,
      memoryUsedBytes: Number.NaN,
      memoryTotalBytes: 1.5,
      gpus: Array.from({ length: 100 }, () => ({ index: -1, name: "x".repeat(500), utilizationPercent: -3, memoryUsedBytes: 7, memoryTotalBytes: Infinity })),
    } as MachineLoad;
    const clean = cleanLoad(wild);
    expect(clean).toMatchObject({ sampledAtMs: 0, cpuPercent: 100, memoryUsedBytes: 0, memoryTotalBytes: 1 });
    expect(clean.gpus).toHaveLength(64);
    expect(clean.gpus[3]).toEqual({ index: 3, name: "x".repeat(200), utilizationPercent: -1, memoryUsedBytes: 7, memoryTotalBytes: 0 });
    expect(cleanLoad({ gpus: "no" } as unknown as MachineLoad)).toEqual({ sampledAtMs: 0, cpuPercent: 0, memoryUsedBytes: 0, memoryTotalBytes: 0, gpus: [] });

    let now = 0;
    const loads = new MachineLoads(() => now);
    loads.reported("mach_1", { ...clean, cpuPercent: 10 });
    now = 500;
    loads.reported("mach_1", { ...clean, cpuPercent: 20 });
    expect(loads.get("mach_1")!.load.cpuPercent).toBe(10);
    now = 1000;
    loads.reported("mach_1", { ...clean, cpuPercent: 30 });
    expect(loads.get("mach_1")).toMatchObject({ receivedAt: 1000, load: { cpuPercent: 30 } });
    loads.gone("mach_1");
    expect(loads.get("mach_1")).toBeUndefined();
  });

  it("crosses relays only in the shape expected", () => {
    expect(readLoadsRequest({ machines: ["mach_a", "mach_b"] })).toEqual(["mach_a", "mach_b"]);
    expect(readLoadsRequest({ machines: ["../etc"] })).toBeUndefined();
    expect(readLoadsRequest({ machines: Array.from({ length: 10_001 }, (_, i) => `m${i}`) })).toBeUndefined();
    const usage: MachineLoad = { sampledAtMs: 1, cpuPercent: 5, memoryUsedBytes: 1, memoryTotalBytes: 2, gpus: [] };
    expect(readLoadsReply({ loads: [["mach_a", usage, 40], ["bad id!", usage, 1], ["mach_b", usage, -1], ["mach_c", "no", 1]] })).toEqual([["mach_a", usage, 40]]);
    expect(readLoadsReply({ error: "x" })).toEqual([]);
    expect(readLoadsReply(undefined)).toEqual([]);
  });
});
