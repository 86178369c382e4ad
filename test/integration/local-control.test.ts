import { statSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { resolveAgentConfig, startAgent } from "../../agent/index.js";
import { silentLogger } from "../../proto/index.js";
import { runCli } from "../helpers/cli.js";
import type { GraphicsController } from "../../agent/hardware/detect-hardware.js";
import { fixtureSource } from "../helpers/hardware-fixtures.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";

describe("the agent's local control socket and the commands that read it", () => {
  let gw: TestGateway;
  let socket: string;
  const cli = async (...args: string[]) => {
    const r = await runCli([...args, "--socket", socket, "--json"]);
    return { ...r, json: r.stdout ? (JSON.parse(r.stdout) as unknown) : undefined };
  };

  beforeAll(async () => {
    gw = await startTestGateway();
    socket = gw.agent.config.controlSocket;
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("listens on a socket only its owner can use", () => {
    expect(statSync(socket).isSocket()).toBe(true);
    expect(statSync(socket).mode & 0o777).toBe(0o600);
  });

  it("makina info shows the machine, relay, link, version and hardware", async () => {
    const r = await cli("info");
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toMatchObject({ machine_id: gw.machineId, relay: gw.relay.linkAddress, link: "online", agent_version: expect.stringMatching(/^\d+\.\d+\.\d+$/), hardware: { cpu_threads: expect.any(Number) } });
  });

  it("makina runtime list and model list show the deployed stack's runtime and model", async () => {
    const runtimes = await cli("runtime", "list");
    expect(runtimes.json).toEqual([expect.objectContaining({ name: "gguf", state: "ready", endpoint: expect.stringMatching(/^unix:\/.*\/gguf-[0-9a-f]+\.sock$/), pid: expect.any(Number), model: gw.modelId, stack_id: gw.stackId, version: expect.stringContaining("node-llama-cpp") })]);
    // What it counts against the machine's memory budget (90% of this machine's RAM by default), in JSON and in words.
    expect((runtimes.json as { memory_bytes: number }[])[0]!.memory_bytes).toBeGreaterThan(256 * 1024 ** 2);
    const text = await runCli(["runtime", "list", "--socket", gw.agent.config.controlSocket]);
    expect(text.stdout).toMatch(/ready\s+~\d+ MiB\s+unix:/);
    expect(text.stdout).toMatch(/Loaded runtimes: memory \d+ MiB of [\d.]+ GiB \(--memory-budget\); 1 loaded\./);
    // The model process's socket is in a directory only the agent's user can enter.
    const socket = (runtimes.json as { endpoint: string }[])[0]!.endpoint.slice("unix:".length);
    expect(statSync(dirname(socket)).mode & 0o777).toBe(0o700);
    const models = await cli("model", "list");
    expect(models.json).toEqual([expect.objectContaining({ name: "stories260K.gguf", format: "gguf", size_bytes: 1185376, sha256: "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d", stacks: [gw.stackId] })]);
  });

  it("makina doctor passes on a healthy agent", async () => {
    const r = await cli("doctor");
    expect(r.code, r.stdout).toBe(0);
    expect(r.json).toMatchObject({ ok: true });
  });

  it("makina doctor exits 1 and says so when the relay rejects the machine token", async () => {
    const dir = join(gw.dataDir, "impostor");
    const impostor = await startAgent(
      resolveAgentConfig({ flags: { server: gw.relay.linkAddress, machineId: gw.machineId, token: "mk_mach_notTheRightToken0000000000000000", dataDir: dir, threads: 1, gpu: false, reconnectMinMs: 50, reconnectMaxMs: 200 } }),
      { log: silentLogger() },
    );
    try {
      await vi.waitFor(() => expect(impostor.link.credentialsRejected).toBe(true), { timeout: 5_000, interval: 20 });
      const r = await runCli(["doctor", "--socket", impostor.config.controlSocket]);
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/FAIL\s+machine token accepted/);
      expect(r.stdout).toContain("makina admin machine create");
    } finally {
      await impostor.stop();
    }
  });

  it("makina doctor exits 1 with a hint when no agent runs", async () => {
    const r = await runCli(["doctor", "--socket", join(gw.dataDir, "nothing-here.sock")]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/FAIL\s+daemon running/);
    expect(r.stdout).toContain("hint:");
    const info = await runCli(["info", "--socket", join(gw.dataDir, "nothing-here.sock")]);
    expect(info.code).toBe(1);
    expect(info.stderr).toContain("The agent is not running");
  });

  it("refuses to start a second agent on the same socket", async () => {
    await expect(startAgent(gw.agent.config, { log: silentLogger() })).rejects.toThrow(/already running/);
  });

  it("reports hardware changes to the relay", async () => {
    let gpus: GraphicsController[] = [];
    const dir = join(gw.dataDir, "changing");
    const { machine, token } = await gw.relay.control.machines.create(OP, { org: gw.orgId, name: "changing" });
    const agent = await startAgent(
      resolveAgentConfig({ flags: { server: gw.relay.linkAddress, machineId: machine.id, token, dataDir: dir, threads: 1, gpu: false, hardwareIntervalMs: 1000 } }),
      { log: silentLogger(), hardwareSource: fixtureSource("cpu-vm", { graphics: async () => ({ controllers: gpus }) }) },
    );
    try {
      await agent.link.whenOnline();
      expect((await gw.relay.store.machines.get(machine.id))!.hardware!.gpus).toEqual([]);
      // A GPU appears, as systeminformation shows it once the NVIDIA driver answers.
      gpus = [{ vendor: "NVIDIA Corporation", model: "AD104GL [L4]", name: "NVIDIA L4", vram: 23034, memoryTotal: 23034, driverVersion: "550.54.15" }];
      await vi.waitFor(async () => expect((await gw.relay.store.machines.get(machine.id))!.hardware!.gpus.map((g) => g.model)).toEqual(["NVIDIA L4"]), { timeout: 10_000, interval: 50 });
      const info = await runCli(["info", "--socket", agent.config.controlSocket]);
      expect(info.stdout).toMatch(/gpus:\s+NVIDIA L4, 22 GiB, driver 550\.54\.15\n/);
    } finally {
      await agent.stop();
    }
  });
});
