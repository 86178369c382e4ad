import { describe, expect, it } from "vitest";
import { detectHardware, hardwareChanged } from "../../agent/hardware/detect-hardware.js";
import { fixtureSource } from "../helpers/hardware-fixtures.js";

describe("hardware detection", () => {
  it("reports an NVIDIA Linux server with its GPUs, VRAM, drivers and CUDA", async () => {
    const { report, problems } = await detectHardware({ source: fixtureSource("nvidia-linux") });
    expect(problems).toEqual([]);
    expect(report).toMatchObject({ platform: "linux", arch: "x64", os: "Ubuntu 22.04.4 LTS", cpuModel: "AMD EPYC 7763 64-Core Processor", cpuPhysicalCores: 64, cpuLogicalCores: 128, accelerators: ["cuda", "vulkan"] });
    expect(report.gpus.filter((g) => g.vendor.startsWith("NVIDIA"))).toEqual([
      { vendor: "NVIDIA Corporation", model: "NVIDIA A100-SXM4-80GB", vramBytes: 80 * 2 ** 30, driverVersion: "550.54.15" },
      { vendor: "NVIDIA Corporation", model: "NVIDIA A100-SXM4-80GB", vramBytes: 80 * 2 ** 30, driverVersion: "550.54.15" },
    ]);
    expect(report.disks.map((d) => d.mount)).toEqual(["/", "/data"]);
  });

  it("reports an Apple-silicon Mac with Metal and unified memory", async () => {
    const { report } = await detectHardware({ source: fixtureSource("apple-silicon") });
    expect(report).toMatchObject({ platform: "darwin", arch: "arm64", os: "macOS 14.5", cpuModel: "Apple M2 Max", memoryBytes: 64 * 2 ** 30, accelerators: ["metal"] });
    expect(report.gpus).toEqual([{ vendor: "Apple", model: "Apple M2 Max", vramBytes: 0, driverVersion: "" }]);
  });

  it("reports a CPU-only VM (recorded on the CI machine)", async () => {
    const { report } = await detectHardware({ source: fixtureSource("cpu-vm") });
    expect(report).toMatchObject({ platform: "linux", os: "Debian GNU/Linux 12", cpuLogicalCores: 2, gpus: [], accelerators: [] });
  });

  it("reports this machine for real", async () => {
    const { report } = await detectHardware();
    expect(report.platform).toBe(process.platform);
    expect(report.cpuLogicalCores).toBeGreaterThan(0);
    expect(report.memoryBytes).toBeGreaterThan(0);
    expect(report.disks.length).toBeGreaterThan(0);
  });

  it("keeps going when a probe fails or hangs, and says which", async () => {
    const { report, problems } = await detectHardware({
      source: fixtureSource("nvidia-linux", {
        graphics: async () => {
          throw new Error("nvidia-smi: command not found");
        },
        gpuBackends: () => new Promise(() => {}),
      }),
      timeoutMs: 50,
    });
    expect(problems).toEqual(["gpu probe failed: nvidia-smi: command not found", "gpu backend probe failed: timed out after 50 ms"]);
    expect(report.gpus).toEqual([]);
    expect(report.cpuPhysicalCores).toBe(64);
  });

  it("tells a change worth reporting from disk free space drifting", async () => {
    const { report } = await detectHardware({ source: fixtureSource("nvidia-linux") });
    const drift = { ...report, disks: report.disks.map((d) => ({ ...d, freeBytes: d.freeBytes + 1000 })) };
    expect(hardwareChanged(report, drift)).toBe(false);
    expect(hardwareChanged(report, { ...report, gpus: report.gpus.slice(1) })).toBe(true);
    expect(hardwareChanged(report, { ...report, disks: report.disks.map((d) => ({ ...d, freeBytes: d.freeBytes - 5 * 2 ** 30 })) })).toBe(true);
  });
});
