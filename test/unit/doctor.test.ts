import { describe, expect, it } from "vitest";
import type { AgentStatus } from "../../agent/control/agent-status.js";
import { doctorChecks, type DoctorCheck } from "../../agent/doctor/doctor-checks.js";
import { detectHardware } from "../../agent/hardware/detect-hardware.js";
import { fixtureSource, type MachineKind } from "../helpers/hardware-fixtures.js";

async function status(kind: MachineKind, patch: Partial<AgentStatus> = {}): Promise<AgentStatus> {
  const { report } = await detectHardware({ source: fixtureSource(kind) });
  return {
    agentVersion: "0.1.0",
    pid: 42,
    startedAt: 0,
    machineId: "mach_1",
    server: "relay.example:8081",
    dataDir: "/var/lib/makina",
    link: { state: "online", lastError: null, credentialsRejected: false, onlineSince: 0 },
    hardware: report,
    hardwareProblems: [],
    accelerators: report.accelerators,
    disk: { path: "/var/lib/makina", freeBytes: 500 * 2 ** 30, sizeBytes: 1000 * 2 ** 30 },
    runtimes: [],
    models: [],
    memory: { budgetBytes: 0, usedBytes: 0, maxLoaded: 0, loaded: 0, loadedStacks: [] },
    ...patch,
  };
}

const byName = (checks: DoctorCheck[], name: string) => checks.find((c) => c.name === name)!;
const failing = (checks: DoctorCheck[]) => checks.filter((c) => c.level === "fail").map((c) => c.name);

describe("makina doctor", () => {
  it("passes every check on a healthy machine", async () => {
    for (const kind of ["nvidia-linux", "apple-silicon", "cpu-vm"] as const) {
      const checks = doctorChecks(await status(kind), { socketPaths: [] });
      expect(checks.map((c) => c.name)).toEqual(["daemon running", "config readable", "relay reachable", "machine token accepted", "runtimes healthy", "disk space", "GPU detection"]);
      expect(failing(checks)).toEqual([]);
    }
    expect(byName(doctorChecks(await status("nvidia-linux"), { socketPaths: [] }), "GPU detection").detail).toContain("via cuda, vulkan");
  });

  it("fails with a hint when the daemon is not running", () => {
    const checks = doctorChecks(null, { socketPaths: ["/run/makina/agent.sock"], configFile: "/etc/makina/agent.json", server: "relay:8081", relayReachable: false });
    expect(failing(checks)).toEqual(["daemon running", "relay reachable"]);
    expect(byName(checks, "daemon running").hint).toContain("systemctl start makina-agent");
    expect(byName(checks, "config readable").level).toBe("ok");
  });

  it("fails when the config cannot be read", () => {
    const checks = doctorChecks(null, { socketPaths: ["/x"], configFile: "/etc/makina/agent.json", configProblems: ["token (--token or MAKINA_AGENT_TOKEN) is required"] });
    expect(byName(checks, "config readable")).toMatchObject({ level: "fail", detail: expect.stringContaining("token") });
  });

  it("fails when the relay cannot be reached", async () => {
    const checks = doctorChecks(await status("cpu-vm", { link: { state: "waiting", lastError: "UNAVAILABLE: No connection established", credentialsRejected: false, onlineSince: null } }), { socketPaths: [] });
    expect(failing(checks)).toEqual(["relay reachable"]);
    expect(byName(checks, "relay reachable").hint).toContain("relay.example:8081");
  });

  it("fails when the relay rejects the machine token", async () => {
    const checks = doctorChecks(await status("cpu-vm", { link: { state: "waiting", lastError: "UNAUTHENTICATED: Unknown machine ID or machine token rejected.", credentialsRejected: true, onlineSince: null } }), { socketPaths: [] });
    expect(failing(checks)).toEqual(["machine token accepted"]);
    expect(byName(checks, "machine token accepted").hint).toContain("makina admin machine create");
  });

  it("fails when a runtime has failed", async () => {
    const runtime = { stackId: "stk_1", modelId: "chat", runtime: "gguf", state: "failed" as const, endpoint: "in-process", modelRef: "m.gguf", modelPath: null, modelSha256: null, modelSizeBytes: null, contextSize: null, maxContext: null, residency: "always" as const, error: "crashed 5 times in 60 s", since: 0, pid: null, memoryBytes: 0, version: "x" };
    const checks = doctorChecks(await status("cpu-vm", { runtimes: [runtime] }), { socketPaths: [] });
    expect(byName(checks, "runtimes healthy")).toMatchObject({ level: "fail", detail: "chat (gguf): crashed 5 times in 60 s" });
  });

  it("fails when the disk is nearly full, and warns when it is getting there", async () => {
    const low = doctorChecks(await status("cpu-vm", { disk: { path: "/d", freeBytes: 300 * 2 ** 20, sizeBytes: 2 ** 40 } }), { socketPaths: [] });
    expect(byName(low, "disk space")).toMatchObject({ level: "fail", detail: "0.3 GiB free on /d" });
    const tight = doctorChecks(await status("cpu-vm", { disk: { path: "/d", freeBytes: 5 * 2 ** 30, sizeBytes: 2 ** 40 } }), { socketPaths: [] });
    expect(byName(tight, "disk space").level).toBe("warn");
  });

  it("fails when an NVIDIA GPU is present but its driver is missing", async () => {
    // lspci sees the card, nvidia-smi cannot reach a driver, node-llama-cpp finds neither CUDA nor Vulkan.
    const checks = doctorChecks(await status("nvidia-no-driver"), { socketPaths: [] });
    expect(byName(checks, "GPU detection")).toMatchObject({ level: "fail", detail: "AD102 [GeForce RTX 4090] present, but neither CUDA nor Vulkan is usable" });
    expect(byName(checks, "GPU detection").hint).toContain("install the NVIDIA driver");
    expect(failing(checks)).toEqual(["GPU detection"]);
  });

  it("warns about hardware probes that failed", async () => {
    const checks = doctorChecks(await status("cpu-vm", { hardwareProblems: ["gpu probe failed: timed out after 10000 ms"] }), { socketPaths: [] });
    expect(byName(checks, "hardware probes")).toMatchObject({ level: "warn" });
  });
});
