import { describe, expect, it } from "vitest";
import { detectHardware, hardwareChanged } from "../../agent/hardware/detect-hardware.js";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fixtureFileSource, fixtureSource, HARDWARE_FIXTURES, standinHardwareEnv, type Fixture } from "../helpers/hardware-fixtures.js";
import { REPO_ROOT } from "../helpers/models.js";

describe("hardware detection", () => {
  // The two NVIDIA machines are stand-ins (see their fixture files): their lspci and nvidia-smi output is replayed
  // through systeminformation's own Linux parser by stand-in executables, as it would run on such a machine.
  it("reports an NVIDIA Linux server with its GPUs, VRAM and driver from nvidia-smi, and CUDA", async () => {
    const { report, problems } = await detectHardware({ source: fixtureSource("nvidia-linux") });
    expect(problems).toEqual([]);
    expect(report).toMatchObject({ platform: "linux", arch: "x64", os: "Ubuntu 22.04.4 LTS", cpuModel: "AMD EPYC 7763 64-Core Processor", cpuPhysicalCores: 64, cpuLogicalCores: 128, accelerators: ["cuda", "vulkan"] });
    expect(report.gpus).toEqual([
      { vendor: "ASPEED Technology, Inc.", model: "ASPEED Graphics Family", vramBytes: 64 * 2 ** 20, driverVersion: "" },
      // nvidia-smi's product name and memory, not lspci's chip name and 128 GiB PCI window
      { vendor: "NVIDIA Corporation", model: "NVIDIA A100-SXM4-80GB", vramBytes: 80 * 2 ** 30, driverVersion: "550.54.15" },
      { vendor: "NVIDIA Corporation", model: "NVIDIA A100-SXM4-80GB", vramBytes: 80 * 2 ** 30, driverVersion: "550.54.15" },
    ]);
    expect(report.disks.map((d) => d.mount)).toEqual(["/", "/data"]);
  });

  it("reports an NVIDIA GPU whose driver is missing with unknown VRAM rather than its PCI window", async () => {
    const { report, problems } = await detectHardware({ source: fixtureSource("nvidia-no-driver") });
    expect(problems).toEqual([]);
    expect(report.gpus).toEqual([
      { vendor: "NVIDIA Corporation", model: "AD102 [GeForce RTX 4090]", vramBytes: 0, driverVersion: "" },
      { vendor: "Advanced Micro Devices, Inc. [AMD/ATI]", model: "Raphael", vramBytes: 256 * 2 ** 20, driverVersion: "" },
    ]);
    expect(report.accelerators).toEqual([]);
  });

  // A real recording (../shared/hardware): an H100 server with nvidia-smi but no lspci, where systeminformation
  // builds the GPU from clinfo and never asks nvidia-smi. The agent asks nvidia-smi itself.
  it("reports a real H100 server without lspci with its 80 GB and driver, asking nvidia-smi directly", async () => {
    const { report, problems } = await detectHardware({ source: fixtureSource("nvidia-h100") });
    expect(problems).toEqual([]);
    expect(report).toMatchObject({ platform: "linux", os: "Ubuntu 24.04.3 LTS", cpuLogicalCores: 16 });
    expect(report.gpus).toEqual([{ vendor: "NVIDIA Corporation", model: "NVIDIA H100 80GB HBM3", vramBytes: 81559 * 2 ** 20, driverVersion: "580.159.04" }]);
  });

  it("reports the H100's VRAM as unknown when nvidia-smi does not answer, as systeminformation alone would", async () => {
    const { report } = await detectHardware({ source: fixtureSource("nvidia-h100", { nvidiaSmi: async () => null }) });
    expect(report.gpus).toEqual([{ vendor: "NVIDIA Corporation", model: "NVIDIA H100 80GB HBM3", vramBytes: 0, driverVersion: "" }]);
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
          throw new Error("lspci: command not found");
        },
        gpuBackends: () => new Promise(() => {}),
      }),
      timeoutMs: 2000,
    });
    expect(problems).toEqual(["gpu probe failed: lspci: command not found", "gpu backend probe failed: timed out after 2000 ms"]);
    // nvidia-smi still names the NVIDIA GPUs when systeminformation's probe fails.
    expect(report.gpus).toEqual([
      { vendor: "NVIDIA", model: "NVIDIA A100-SXM4-80GB", vramBytes: 80 * 2 ** 30, driverVersion: "550.54.15" },
      { vendor: "NVIDIA", model: "NVIDIA A100-SXM4-80GB", vramBytes: 80 * 2 ** 30, driverVersion: "550.54.15" },
    ]);
    expect(report.cpuPhysicalCores).toBe(64);
  });

  it("tells a change worth reporting from disk free space drifting", async () => {
    const { report } = await detectHardware({ source: fixtureSource("nvidia-linux") });
    const drift = { ...report, disks: report.disks.map((d) => ({ ...d, freeBytes: d.freeBytes + 1000 })) };
    expect(hardwareChanged(report, drift)).toBe(false);
    expect(hardwareChanged(report, { ...report, gpus: report.gpus.slice(1) })).toBe(true);
    expect(hardwareChanged(report, { ...report, disks: report.disks.map((d) => ({ ...d, freeBytes: d.freeBytes - 5 * 2 ** 30 })) })).toBe(true);
  });

  describe("scripts/record-hardware.mjs", () => {
    const record = (dir: string, env?: NodeJS.ProcessEnv) =>
      execFileSync(process.execPath, [join(REPO_ROOT, "scripts", "record-hardware.mjs"), "probe", "--dir", dir], { cwd: REPO_ROOT, env, encoding: "utf8" });

    it("records this machine as a fixture that gives the same report as live detection, without serial numbers", async () => {
      const dir = mkdtempSync(join(tmpdir(), "makina-hw-"));
      try {
        record(dir, process.env);
        const text = readFileSync(join(dir, "probe.json"), "utf8");
        expect(text).not.toMatch(/"(serial|uuid|hostname|fqdn)"/i);
        const recorded = (await detectHardware({ source: fixtureFileSource(join(dir, "probe.json")) })).report;
        const live = (await detectHardware()).report;
        expect({ ...recorded, disks: [] }).toEqual({ ...live, disks: [] });
        expect(recorded.disks.map((d) => d.mount)).toEqual(live.disks.map((d) => d.mount));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it("keeps the raw lspci and nvidia-smi output on Linux, which replays to what systeminformation said", async () => {
      const dir = mkdtempSync(join(tmpdir(), "makina-hw-"));
      try {
        // On the stand-in NVIDIA server: PATH leads to the stand-in lspci and nvidia-smi.
        const env = { ...standinHardwareEnv(HARDWARE_FIXTURES, { lspci: "nvidia-linux.lspci.txt", nvidiaSmi: "nvidia-linux.nvidia-smi.csv" }), HOME: tmpdir() };
        expect(record(dir, env)).toContain("with the raw lspci/nvidia-smi output beside it");
        const fixture = JSON.parse(readFileSync(join(dir, "probe.json"), "utf8")) as Fixture;
        expect(fixture.graphicsReplay).toEqual({ lspci: "probe.lspci.txt", nvidiaSmi: "probe.nvidia-smi.csv" });
        expect(readFileSync(join(dir, "probe.nvidia-smi.csv"), "utf8")).toBe(readFileSync(join(HARDWARE_FIXTURES, "nvidia-linux.nvidia-smi.csv"), "utf8"));
        const replayed = await fixtureFileSource(join(dir, "probe.json")).graphics();
        expect(replayed).toEqual(fixture.graphics);
        expect(replayed.controllers.map((c) => c.name ?? c.model)).toEqual(["ASPEED Graphics Family", "NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB"]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
  // Node 20's execFile, given a signal, kills its child on abort; for a tool that is not installed, before Node has
  // said so, that kill is kill(0, SIGTERM): the agent's whole process group. An agent stopped while it looked for
  // nvidia-smi killed the test run this way. The probe runs in a process group of its own here, so that the old
  // behaviour kills only it.
  it("stops looking for nvidia-smi on a machine without it, when the agent stops, without signalling anything else", async () => {
    const script = [
      `const { queryNvidiaSmi } = await import(${JSON.stringify(join(REPO_ROOT, "dist", "agent", "hardware", "nvidia-smi.js"))});`,
      `const stopping = new AbortController();`,
      `const found = queryNvidiaSmi({ env: { PATH: "/nonexistent" }, signal: stopping.signal });`,
      `stopping.abort();`,
      `console.log(JSON.stringify(await found));`,
    ].join("\n");
    const probe = spawn(process.execPath, ["--input-type=module", "-e", script], { detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    probe.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    probe.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => probe.once("exit", (c, s) => resolve([c, s])));
    expect({ code, signal, out: out.trim() }).toEqual({ code: 0, signal: null, out: "null" });
  });
});
