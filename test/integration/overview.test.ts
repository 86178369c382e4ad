import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { queryNvidiaGpus, systemLoadSource } from "../../agent/hardware/machine-load.js";
import type { Overview } from "../../relay/admin-contract/index.js";
import { SHARED_HARDWARE, standinNvidiaSmiEnv } from "../helpers/hardware-fixtures.js";
import { testModelPath } from "../helpers/models.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";

const MIB = 1024 * 1024;

/**
 * A line of `nvidia-smi` as the recorded H100 server answered (../shared/hardware), with the memory in use and
 * the utilization given. No GPU is reachable here: the agent asks the stand-in `nvidia-smi` of
 * test/fixtures/standins, which prints this file.
 */
function h100Line(usedMiB: number, utilization: string): string {
  const recorded = readFileSync(join(SHARED_HARDWARE, "nvidia-h100.nvidia-smi.csv"), "utf8").trim().split(", ");
  recorded[6] = String(usedMiB);
  recorded[8] = utilization;
  return recorded.join(", ");
}

// The overview (issue 21, point 2): machines by state with their live load (CPU, memory, and each GPU's
// utilization and memory as `nvidia-smi` says), stacks by state, and the gateway's requests of the last
// minute and hour, for an organization, one machine or one stack. Real GGUF inference through the real gateway.
describe("the overview", () => {
  let gw: TestGateway;
  let dir: string;
  let smiFile: string;
  const operator = (path: string) => fetch(`${gw.relay.url}${path}`, { headers: { authorization: `Bearer ${gw.relay.adminToken}` } });
  const overview = async (query = ""): Promise<Overview> => {
    const res = await operator(`/admin/v1/overview?org=${gw.orgId}${query}`);
    expect(res.status, await res.clone().text()).toBe(200);
    return (await res.json()) as Overview;
  };
  const chat = (body: Record<string, unknown>, key = gw.apiKey) =>
    fetch(`${gw.baseURL}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ model: gw.modelId, max_tokens: 6, messages: [{ role: "user", content: "Once upon a time" }], ...body }) });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "makina-overview-"));
    smiFile = join(dir, "nvidia-smi.csv");
    writeFileSync(smiFile, `${h100Line(40_000, "73")}\n${h100Line(1024, "[N/A]")}\n`);
    const smiEnv = standinNvidiaSmiEnv(smiFile);
    gw = await startTestGateway({
      agentFlags: { loadIntervalMs: 1000 },
      agentOptions: { loadSource: { ...systemLoadSource(), gpus: (signal) => queryNvidiaGpus(signal, smiEnv) } },
    });
  });
  afterAll(async () => {
    await gw?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("shows each online machine's CPU, memory and GPUs as its agent samples them, and follows them live", async () => {
    await vi.waitFor(async () => expect((await overview()).loads).toHaveLength(1), { timeout: 10_000, interval: 200 });
    const first = await overview();
    expect(first.machines).toEqual({ total: 1, online: 1, offline: 0, pending: 0, revoked: 0 });
    const [load] = first.loads;
    expect(load).toMatchObject({ machine_id: gw.machineId, name: "test-machine" });
    expect(load!.memory_total_bytes).toBeGreaterThan(0);
    expect(load!.memory_used_bytes).toBeGreaterThan(0);
    expect(load!.memory_used_bytes).toBeLessThanOrEqual(load!.memory_total_bytes);
    expect(load!.cpu_percent).toBeGreaterThanOrEqual(0);
    expect(load!.cpu_percent).toBeLessThanOrEqual(100);
    expect(load!.gpus).toEqual([
      { index: 0, name: "NVIDIA H100 80GB HBM3", utilization_percent: 73, memory_used_bytes: 40_000 * MIB, memory_total_bytes: 81_559 * MIB },
      // nvidia-smi's `[N/A]`: not known, rather than 0.
      { index: 1, name: "NVIDIA H100 80GB HBM3", utilization_percent: null, memory_used_bytes: 1024 * MIB, memory_total_bytes: 81_559 * MIB },
    ]);

    // The GPU gets busier: the next sample (a second later) says so.
    writeFileSync(smiFile, `${h100Line(80_000, "99")}\n`);
    await vi.waitFor(async () => expect((await overview()).loads[0]!.gpus).toEqual([expect.objectContaining({ utilization_percent: 99, memory_used_bytes: 80_000 * MIB })]), { timeout: 10_000, interval: 200 });
    // The machine's own page gets the same.
    expect((await overview(`&machine=${gw.machineId}`)).loads[0]!.gpus[0]!.utilization_percent).toBe(99);
  });

  it("counts stacks by state and their runtimes by what the machine reported", async () => {
    const draft = await gw.relay.control.stacks.create(OP, { org: gw.orgId, name: "not-yet", machine: gw.machineId, runtime: "gguf", model: testModelPath(), modelId: "later" });
    try {
      const o = await overview();
      expect(o.stacks).toEqual({ total: 2, by_state: { draft: 1, deploying: 0, deployed: 1, failed: 0, undeploying: 0 }, runtimes: { ready: 1, loading: 0, failed: 0, unloaded: 0, unknown: 0, offline: 0 } });
      const one = await overview(`&stack=${gw.stackId}`);
      expect(one.scope).toEqual({ machine: null, stack: gw.stackId });
      expect(one.stacks.total).toBe(1);
      expect(one.machines.online).toBe(1);
    } finally {
      await gw.relay.control.stacks.delete(OP, draft.id);
    }
  });

  it("gives the last minute's requests and tokens and the last hour's errors, latency and runtime speed, for the organization and for one stack", async () => {
    const before = (await overview()).requests;
    const answered = await chat({});
    expect(answered.status).toBe(200);
    const streamed = await chat({ stream: true, max_tokens: 12 });
    expect(streamed.status).toBe(200);
    await streamed.text();
    expect((await chat({ messages: "not a list" })).status).toBe(400);

    const r = (await overview()).requests;
    expect(r.requests_per_minute - before.requests_per_minute).toBe(3);
    expect(r.requests - before.requests).toBe(3);
    expect(r.errors - before.errors).toBe(1);
    expect(r.error_rate).toBeCloseTo(r.errors / r.requests, 6);
    expect(r.tokens_per_second).toBeGreaterThan(before.tokens_per_second);
    expect(r.completion_tokens - before.completion_tokens).toBeGreaterThanOrEqual(2);
    expect(r.p50_ms).not.toBeNull();
    expect(r.p95_ms!).toBeGreaterThanOrEqual(r.p50_ms!);
    expect(r.decode_tokens_per_second).toBeGreaterThan(0);
    // Every one of the last 60 minutes, the current one last.
    expect(r.minutes).toHaveLength(60);
    expect(r.minutes[59]!.start).toBe(Math.floor(Date.now() / 60_000) * 60_000);
    expect(r.minutes.reduce((n, m) => n + m.requests, 0)).toBe(r.requests);

    // The stack's own: the same requests but the one refused before a stack was chosen (its body was not a chat).
    const stack = (await overview(`&stack=${gw.stackId}`)).requests;
    expect(stack.requests).toBe(r.requests - r.errors + stack.errors);
    expect(stack.decode_tokens_per_second).toBeGreaterThan(0);
    const machine = (await overview(`&machine=${gw.machineId}`)).requests;
    expect(machine.requests).toBe(stack.requests);
  });

  it("refuses a bad scope in the documented shape, and another organization's machine as not found", async () => {
    const both = await operator(`/admin/v1/overview?org=${gw.orgId}&machine=${gw.machineId}&stack=${gw.stackId}`);
    expect(both.status).toBe(400);
    expect(await both.json()).toEqual({ error: { type: "invalid_request_error", code: "invalid_value", param: "stack", message: "Give 'machine' or 'stack', not both." } });
    const other = await gw.relay.control.orgs.create(OP, { name: "Other Org" });
    const foreign = await operator(`/admin/v1/overview?org=${other.id}&machine=${gw.machineId}`);
    expect(foreign.status).toBe(404);
    expect(((await foreign.json()) as { error: { param: string } }).error.param).toBe("machine");
    const none = await operator(`/admin/v1/overview`);
    expect(none.status).toBe(400);
  });

  it("forgets a machine's load once its link is gone", async () => {
    await gw.agent.stop();
    await vi.waitFor(async () => expect((await overview()).machines).toMatchObject({ online: 0, offline: 1 }), { timeout: 10_000, interval: 100 });
    const offline = await overview();
    expect(offline.loads).toEqual([]);
    // Its stack's runtime said "ready" last, but nothing serves it while its machine is away.
    expect(offline.stacks.runtimes).toEqual({ ready: 0, loading: 0, failed: 0, unloaded: 0, unknown: 0, offline: 1 });
    await gw.restartAgent();
    await vi.waitFor(async () => expect((await overview()).loads).toHaveLength(1), { timeout: 10_000, interval: 200 });
  });
});
