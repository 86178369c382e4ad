import Database from "better-sqlite3";
import { closeSync, ftruncateSync, mkdtempSync, openSync, rmSync, utimesSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { resolveAgentConfig, startAgent, type Agent } from "../../agent/index.js";
import { freePort } from "../../agent/supervisor/index.js";
import { silentLogger } from "../../proto/index.js";
import { resolveRelayConfig } from "../../relay/index.js";
import { startRelay, type RelayInternals as Relay } from "../../relay/start/start-relay.js";
import { fixtureSource } from "../helpers/hardware-fixtures.js";
import { REPO_ROOT, testModelPath } from "../helpers/models.js";
import { OP } from "../helpers/operator.js";

/**
 * A relay restart (an upgrade, a crash) costs its machines seconds: each agent reconnects by itself, reports what
 * it still hosts, and its runtimes keep running with their models loaded; a large model file on disk is not
 * hashed again (its digest is kept with its size and modification time). The second machine serves a 1 GiB model
 * file through the vLLM stand-in (test/fixtures/standins: no GPU here).
 */
describe("a relay restart", () => {
  let dir: string;
  let relay: Relay | undefined;
  let agent: Agent | undefined;
  let gpuAgent: Agent | undefined;
  afterAll(async () => {
    await agent?.stop();
    await gpuAgent?.stop();
    await relay?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("finds its machines back with their runtimes still loaded, ready and serving, without reloading anything", async () => {
    dir = mkdtempSync(join(tmpdir(), "makina-restart-"));
    const config = resolveRelayConfig({ flags: { dataDir: join(dir, "relay"), port: await freePort(), grpcPort: await freePort(), grpcHost: "127.0.0.1", heartbeatIntervalMs: 500 } });
    relay = await startRelay(config, { log: silentLogger() });
    const org = await relay.control.orgs.create(OP, { name: "Restart Co" });
    const { machine, token } = await relay.control.machines.create(OP, { org: org.id, name: "box" });
    agent = await startAgent(
      resolveAgentConfig({ flags: { server: relay.linkAddress, machineId: machine.id, token, dataDir: join(dir, "agent"), threads: 1, gpu: false, maxContextSize: 512, reconnectMinMs: 50, reconnectMaxMs: 500 } }),
      { log: silentLogger() },
    );
    await agent.link.whenOnline();
    const stack = await relay.control.stacks.create(OP, { org: org.id, name: "s", machine: machine.id, runtime: "gguf", model: testModelPath(), modelId: "stories" });
    await relay.control.stacks.deploy(OP, stack.id);
    await relay.deployer.settled(stack.id);
    const { key } = await relay.control.keys.create(OP, org.id, { name: "k" });
    const pid = agent.host.list()[0]!.pid;
    expect(pid).toEqual(expect.any(Number));

    // A machine with a large model on its disk (sparse: 1 GiB that takes no room), hashed once when first deployed.
    const large = join(dir, "large-model");
    const fd = openSync(large, "w");
    writeSync(fd, "first version");
    ftruncateSync(fd, 2 ** 30);
    closeSync(fd);
    const when = 1_700_000_000;
    utimesSync(large, when, when);
    const gpu = await relay.control.machines.create(OP, { org: org.id, name: "gpu-box" });
    gpuAgent = await startAgent(
      resolveAgentConfig({
        flags: { server: relay.linkAddress, machineId: gpu.machine.id, token: gpu.token, dataDir: join(dir, "gpu-agent"), threads: 1, gpu: false, reconnectMinMs: 50, reconnectMaxMs: 500, python: join(REPO_ROOT, "test", "fixtures", "standins", "python3") },
        env: process.env,
      }),
      { log: silentLogger(), hardwareSource: fixtureSource("nvidia-linux") },
    );
    await gpuAgent.link.whenOnline();
    const big = await relay.control.stacks.create(OP, { org: org.id, name: "big", machine: gpu.machine.id, runtime: "vllm", model: large, modelId: "big" });
    await relay.control.stacks.deploy(OP, big.id);
    await relay.deployer.settled(big.id);
    const pulled = async () => (await relay!.control.stacks.get(OP, big.id)).deployment!.steps.find((st) => st.kind === "pull_model")!.detail as { sha256: string };
    const digest = (await pulled()).sha256;
    const bigPid = gpuAgent.host.list()[0]!.pid;
    // Its bytes change but not its size nor its modification time: only a re-hash would see it.
    const again = openSync(large, "r+");
    writeSync(again, "other version", 0);
    closeSync(again);
    utimesSync(large, when, when);

    await relay.stop();
    await vi.waitFor(() => expect(agent!.link.state).not.toBe("online"), { timeout: 5_000, interval: 10 });
    // Forget what the machine last reported, to see it report again.
    const db = new Database(join(dir, "relay", "makina.db"));
    db.prepare("UPDATE machines SET inventory_json = NULL").run();
    db.close();
    relay = await startRelay(config, { log: silentLogger() });
    const restarted = relay;
    await vi.waitFor(() => expect(restarted.registry.get(machine.id)?.readyStacks.has(stack.id)).toBe(true), { timeout: 20_000, interval: 20 });
    await vi.waitFor(() => expect(restarted.registry.get(gpu.machine.id)?.readyStacks.has(big.id)).toBe(true), { timeout: 20_000, interval: 20 });
    // The same processes serve the models: nothing was reloaded; the large file was not read again.
    expect(agent.host.list().map((r) => [r.stackId, r.state, r.pid])).toEqual([[stack.id, "ready", pid]]);
    expect(gpuAgent.host.list().map((r) => [r.stackId, r.state, r.pid])).toEqual([[big.id, "ready", bigPid]]);
    expect((await pulled()).sha256).toBe(digest);
    expect((await relay.control.stacks.get(OP, stack.id)).state).toBe("deployed");
    // What the machine still hosts, as it reported it on reconnecting.
    await vi.waitFor(async () => expect((await relay!.control.machines.get(OP, machine.id)).inventory?.runtimes.map((r) => r.stackId)).toEqual([stack.id]), { timeout: 5_000, interval: 20 });
    const res = await fetch(`${relay.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "stories", messages: [{ role: "user", content: "Hi" }], max_tokens: 2 }),
    });
    expect(res.status).toBe(200);
  });
});
