import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { resolveAgentConfig, startAgent, type Agent } from "../../agent/index.js";
import { silentLogger } from "../../proto/index.js";
import { testModelPath } from "../helpers/models.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";

// The model is served by a local HTTP server, standing in for Hugging Face.
describe("deploying a stack through its lifecycle", () => {
  let gw: TestGateway;
  let server: Server;
  let downloads = 0;
  let modelUrl: string;
  let agent: Agent | undefined;

  beforeAll(async () => {
    gw = await startTestGateway();
    const model = readFileSync(testModelPath());
    server = createServer((_req, res) => {
      downloads++;
      res.writeHead(200, { "content-length": model.length }).end(model);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    modelUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/stories.gguf`;
  });
  afterAll(async () => {
    await agent?.stop();
    await new Promise((r) => server.close(r));
    await gw?.close();
  });

  it("waits for an offline machine, deploys when it connects, and survives an agent restart without downloading again", async () => {
    const { machine, token } = await gw.relay.control.machines.create(OP, { org: gw.orgId, name: "late" });
    const stack = await gw.relay.control.stacks.create(OP, { org: gw.orgId, name: "late", machine: machine.id, runtime: "gguf", model: modelUrl, modelId: "late-model" });
    expect((await gw.relay.control.stacks.deploy(OP, stack.id)).state).toBe("deploying");
    expect((await gw.relay.control.stacks.get(OP, stack.id)).state).toBe("deploying");
    expect(downloads).toBe(0);

    const config = resolveAgentConfig({ flags: { server: gw.relay.linkAddress, machineId: machine.id, token, dataDir: join(gw.dataDir, "late-agent"), threads: 1, gpu: false, maxContextSize: 512 } });
    agent = await startAgent(config, { log: silentLogger() });
    await vi.waitFor(async () => expect((await gw.relay.control.stacks.get(OP, stack.id)).state).toBe("deployed"), { timeout: 15_000, interval: 50 });
    expect(downloads).toBe(1);
    const steps = (await gw.relay.control.stacks.get(OP, stack.id)).deployment!.steps;
    expect(steps.map((s) => s.state)).toEqual(["succeeded", "succeeded", "succeeded"]);
    expect(steps[1]!.detail).toMatchObject({ sha256: "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d", sizeBytes: 1185376 });

    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
    expect((await client.chat.completions.create({ model: "late-model", messages: [{ role: "user", content: "Hi" }], max_tokens: 2 })).usage!.completion_tokens).toBe(2);

    await agent.stop();
    agent = await startAgent(config, { log: silentLogger() });
    await vi.waitFor(() => expect(gw.relay.registry.get(machine.id)?.readyStacks.has(stack.id)).toBe(true), { timeout: 15_000, interval: 50 });
    expect(downloads).toBe(1);
    expect((await client.chat.completions.create({ model: "late-model", messages: [{ role: "user", content: "Hi" }], max_tokens: 2 })).choices[0]!.finish_reason).toBe("length");

    // Linking again while the database cannot say which stacks the machine has (its connections all busy,
    // as with thousands of machines linking at once): the relay asks again until it can, and serves the stack.
    const lastDeployment = (await gw.relay.control.stacks.get(OP, stack.id)).deployment!.id;
    await agent.stop();
    // The link's own lookup (its first) is answered; the deployer's two after it are not.
    const stacks = gw.relay.store.stacks;
    const listByMachine = stacks.listByMachine.bind(stacks);
    let lookups = 0;
    const busy = vi
      .spyOn(stacks, "listByMachine")
      .mockImplementation((id) => (++lookups === 2 || lookups === 3 ? Promise.reject(new Error("timeout exceeded when trying to connect")) : listByMachine(id)));
    try {
      agent = await startAgent(config, { log: silentLogger() });
      // The deployment ran again (the endpoint configured anew on the machine), as on any link.
      await vi.waitFor(
        async () => {
          const deployment = (await gw.relay.control.stacks.get(OP, stack.id)).deployment!;
          expect([deployment.id === lastDeployment, deployment.state]).toEqual([false, "succeeded"]);
        },
        { timeout: 15_000, interval: 50 },
      );
      expect(gw.relay.registry.get(machine.id)?.readyStacks.has(stack.id)).toBe(true);
    } finally {
      busy.mockRestore();
    }
    expect((await client.chat.completions.create({ model: "late-model", messages: [{ role: "user", content: "Hi" }], max_tokens: 2 })).choices[0]!.finish_reason).toBe("length");
  });

  it("undeploys: the runtime stops on the machine and the model is no longer listed or reachable", async () => {
    const stack = (await gw.relay.control.stacks.records(OP, gw.orgId)).find((s) => s.modelId === "late-model")!;
    expect((await gw.relay.control.stacks.undeploy(OP, stack.id)).state).toBe("draft");
    expect(agent!.host.list().map((r) => r.stackId)).not.toContain(stack.id);
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
    expect((await client.models.list()).data.map((m) => m.id)).not.toContain("late-model");
    const err = await client.chat.completions.create({ model: "late-model", messages: [{ role: "user", content: "Hi" }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it("marks a stack failed with the reason when a step fails", async () => {
    // A model from a host no name resolves to: nothing refuses it before the machine tries to pull it.
    const stack = await gw.relay.control.stacks.create(OP, { org: gw.orgId, name: "broken", machine: gw.machineId, runtime: "gguf", model: "https://models.invalid/model.gguf", modelId: "broken" });
    await gw.relay.control.stacks.deploy(OP, stack.id);
    await gw.relay.deployer.settled(stack.id);
    const s = await gw.relay.control.stacks.get(OP, stack.id);
    expect(s.state).toBe("failed");
    expect(s.stateError).toContain("models.invalid");
    expect(s.deployment!.steps.map((x) => x.state)).toEqual(["succeeded", "failed", "pending"]);
  });

  it("pins a model file's SHA-256: another file fails the deployment with the reason, the pinned one deploys; an unpinned URL is marked unverified", async () => {
    const control = gw.relay.control;
    // Through the admin API, which checks and normalises what a client sends.
    const create = async (body: Record<string, unknown>) => {
      const res = await fetch(`${gw.relay.url}/admin/v1/stacks`, {
        method: "POST",
        headers: { authorization: `Bearer ${gw.relay.adminToken}`, "content-type": "application/json" },
        body: JSON.stringify({ org: gw.orgId, name: "refused", machine: gw.machineId, runtime: "gguf", model: modelUrl, model_id: "refused", ...body }),
      });
      return { status: res.status, body: (await res.json()) as { id: string; model_sha256: string | null; model_unverified: boolean; error?: { code: string; param: string } } };
    };
    const good = "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d";
    const unpinned = await control.stacks.create(OP, { org: gw.orgId, name: "unpinned", machine: gw.machineId, runtime: "gguf", model: modelUrl, modelId: "unpinned" });
    expect([unpinned.modelSha256, unpinned.modelUnverified]).toEqual([null, true]);
    expect((await control.stacks.get(OP, gw.stackId)).modelUnverified).toBe(false); // a file on the machine's disk

    const { body: wrong } = await create({ name: "wrong-pin", model_sha256: "AB".repeat(32), model_id: "wrong-pin" });
    expect([wrong.model_sha256, wrong.model_unverified]).toEqual(["ab".repeat(32), false]);
    await control.stacks.deploy(OP, wrong.id);
    await gw.relay.deployer.settled(wrong.id);
    expect(await control.stacks.get(OP, wrong.id)).toMatchObject({ state: "failed", stateError: expect.stringContaining(`has sha256 ${good}, but the stack expects ${"ab".repeat(32)}`) });

    const pinned = await control.stacks.create(OP, { org: gw.orgId, name: "pinned", machine: gw.machineId, runtime: "gguf", model: modelUrl, modelSha256: good, modelId: "pinned" });
    await control.stacks.deploy(OP, pinned.id);
    await gw.relay.deployer.settled(pinned.id);
    expect((await control.stacks.get(OP, pinned.id)).state).toBe("deployed");

    for (const [input, param] of [
      [{ model_sha256: "abc" }, "model_sha256"],
      [{ model: "hf:org/repo/../../etc/m.gguf" }, "model"],
    ] as const) {
      expect(await create(input)).toMatchObject({ status: 400, body: { error: { code: "invalid_value", param } } });
    }
  });
});
