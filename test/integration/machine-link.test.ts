import { credentials, Metadata, status, type ServiceError } from "@grpc/grpc-js";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { join } from "node:path";
import { resolveAgentConfig, startAgent } from "../../agent/index.js";
import { PROTOCOL_VERSION, silentLogger } from "../../proto/index.js";
import { AgentLinkClient, type RelayMessage } from "../../proto/wire.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";

describe("the link between a machine and the relay", () => {
  let gw: TestGateway;
  let client: OpenAI;
  const chat = () => client.chat.completions.create({ model: gw.modelId, messages: [{ role: "user", content: "Hi" }], max_tokens: 3, temperature: 0 });

  beforeAll(async () => {
    gw = await startTestGateway();
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("shows the machine online with the hardware it reported", async () => {
    const m = (await gw.relay.store.machines.get(gw.machineId))!;
    expect(m.state).toBe("online");
    expect(m.hardware!.cpuLogicalCores).toBeGreaterThan(0);
    expect(m.hardware!.memoryBytes).toBeGreaterThan(0);
    expect(m.agentVersion).toMatch(/^\d+\.\d+\.\d+/);
  });

  it("answers 503 machine_offline with Retry-After once the agent is gone, and serves again when it is back", async () => {
    await gw.agent.stop();
    await vi.waitFor(async () => expect((await gw.relay.store.machines.get(gw.machineId))!.state).toBe("offline"), { timeout: 5000, interval: 50 });

    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: "Hi" }] }),
    });
    expect(res.status).toBe(503);
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(res.headers.get("x-request-id")).toBeTruthy();
    expect(await res.json()).toEqual({ error: { message: expect.any(String), type: "service_unavailable_error", param: null, code: "machine_offline" } });
    // The stack stays deployed while its machine is away: it is listed, only unreachable.
    expect((await client.models.list()).data.map((m) => m.id)).toEqual([gw.modelId]);

    await gw.restartAgent();
    await vi.waitFor(() => expect(gw.relay.registry.get(gw.machineId)?.readyStacks.has(gw.stackId)).toBe(true), { timeout: 10_000, interval: 50 });
    const again = await chat();
    expect(again.usage!.completion_tokens).toBe(3);
  });

  it("reconnects by itself after the relay drops the link", async () => {
    const session = gw.relay.registry.get(gw.machineId)!;
    session.end();
    await vi.waitFor(() => {
      const current = gw.relay.registry.get(gw.machineId);
      expect(current && current !== session && current.readyStacks.has(gw.stackId)).toBe(true);
    }, { timeout: 10_000, interval: 50 });
    expect((await chat()).choices[0]!.finish_reason).toBe("length");
  });

  it("refuses a link with a wrong machine token", async () => {
    const raw = new AgentLinkClient(gw.relay.linkAddress, credentials.createInsecure());
    const md = new Metadata();
    md.set("x-makina-machine-id", gw.machineId);
    md.set("authorization", "Bearer mk_mach_wrongwrongwrongwrongwrongwrongwrong");
    const call = raw.connect(md);
    const error = await new Promise<ServiceError>((resolve) => {
      call.on("error", resolve);
      call.on("data", (_m: RelayMessage) => {});
      call.write({ body: { $case: "hello", value: { protocolVersion: PROTOCOL_VERSION, agentVersion: "x", hardware: undefined } } });
    });
    raw.close();
    expect(error.code).toBe(status.UNAUTHENTICATED);
    // The real agent's link is untouched.
    expect((await gw.relay.store.machines.get(gw.machineId))!.state).toBe("online");
  });

  it("refuses an agent that speaks another protocol version", async () => {
    const raw = new AgentLinkClient(gw.relay.linkAddress, credentials.createInsecure());
    const md = new Metadata();
    md.set("x-makina-machine-id", gw.machineId);
    md.set("authorization", `Bearer ${gw.machineToken}`);
    const call = raw.connect(md);
    const error = await new Promise<ServiceError>((resolve) => {
      call.on("error", resolve);
      call.on("data", () => {});
      call.write({ body: { $case: "hello", value: { protocolVersion: PROTOCOL_VERSION + 1, agentVersion: "x", hardware: undefined } } });
    });
    raw.close();
    expect(error.code).toBe(status.FAILED_PRECONDITION);
    expect(error.details).toContain("not supported");
  });

  it("drops a link whose agent falls silent, and marks the machine offline, while a talking agent stays online", async () => {
    // A machine of its own whose "agent" says hello and then nothing at all (no heartbeats), connection open.
    const { machine, token } = await gw.relay.control.machines.create(OP, { org: gw.orgId, name: "mute" });
    const raw = new AgentLinkClient(gw.relay.linkAddress, credentials.createInsecure());
    const md = new Metadata();
    md.set("x-makina-machine-id", machine.id);
    md.set("authorization", `Bearer ${token}`);
    const call = raw.connect(md);
    call.on("error", () => {});
    call.on("data", () => {});
    call.write({ body: { $case: "hello", value: { protocolVersion: PROTOCOL_VERSION, agentVersion: "mute", hardware: undefined } } });
    await vi.waitFor(async () => expect((await gw.relay.store.machines.get(machine.id))!.state).toBe("online"), { timeout: 5000, interval: 20 });
    // The relay asks for a heartbeat every 500 ms here, and gives up after 3.5 of them.
    await vi.waitFor(async () => expect((await gw.relay.store.machines.get(machine.id))!.state).toBe("offline"), { timeout: 10_000, interval: 50 });
    expect(gw.relay.registry.get(machine.id)).toBeUndefined();
    call.cancel();
    raw.close();
    expect((await gw.relay.store.machines.get(gw.machineId))!.state).toBe("online");
    expect((await chat()).choices[0]!.finish_reason).toBe("length");
  });

  const adminPost = (path: string) => fetch(`${gw.relay.url}/admin/v1${path}`, { method: "POST", headers: { authorization: `Bearer ${gw.relay.adminToken}` } });

  it("revokes a machine: its link drops at once, its stacks answer 503, and it cannot connect again", async () => {
    const { machineId, agent } = await gw.addMachine(gw.orgId);
    await gw.addStack({ orgId: gw.orgId, machineId, modelId: "on-revoked" });
    expect((await client.chat.completions.create({ model: "on-revoked", messages: [{ role: "user", content: "Hi" }], max_tokens: 2 })).usage!.completion_tokens).toBe(2);

    const res = await adminPost(`/machines/${machineId}/revoke`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { revoked_at: number | null }).revoked_at).toEqual(expect.any(Number));
    await vi.waitFor(() => expect(gw.relay.registry.get(machineId)).toBeUndefined(), { timeout: 5000, interval: 10 });
    const refused = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "on-revoked", messages: [{ role: "user", content: "Hi" }] }),
    });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("machine_offline");
    // The agent tries again and is refused, for good.
    await vi.waitFor(() => expect(agent.link.credentialsRejected).toBe(true), { timeout: 10_000, interval: 20 });
    expect(agent.link.lastError).toContain("revoked");
    expect((await gw.relay.store.machines.get(machineId))!.state).toBe("offline");
    // Rotating a revoked machine's token is refused; the other machines are untouched.
    expect((await adminPost(`/machines/${machineId}/rotate-token`)).status).toBe(409);
    expect((await gw.relay.store.machines.get(gw.machineId))!.state).toBe("online");
  });

  it("drops a link whose machine is revoked while the relay checks its credentials, and the agent stops trying", async () => {
    const { machine, token } = await gw.relay.control.machines.create(OP, { org: gw.orgId, name: "revoked-while-linking" });
    const stacks = gw.relay.store.stacks;
    const listByMachine = stacks.listByMachine.bind(stacks);
    // The revoke lands after the credentials passed and before the link is registered, where it finds no link to drop.
    stacks.listByMachine = async (id) => {
      if (id === machine.id) {
        stacks.listByMachine = listByMachine;
        await gw.relay.control.machines.revoke(OP, id);
      }
      return listByMachine(id);
    };
    const agent = await startAgent(
      resolveAgentConfig({ flags: { server: gw.relay.linkAddress, machineId: machine.id, token, dataDir: join(gw.dataDir, `late-${machine.id}`), threads: 1, gpu: false } }),
      { log: silentLogger() },
    );
    try {
      await vi.waitFor(() => expect(agent.link.credentialsRejected).toBe(true), { timeout: 10_000, interval: 20 });
      expect(gw.relay.registry.get(machine.id)).toBeUndefined();
      expect((await gw.relay.store.machines.get(machine.id))!.revokedAt).toEqual(expect.any(Number));
    } finally {
      stacks.listByMachine = listByMachine;
      await agent.stop();
    }
  });

  it("rotates a machine's token: the link drops, the old token is refused and the new one connects", async () => {
    const { machineId, agent } = await gw.addMachine(gw.orgId);
    const res = await adminPost(`/machines/${machineId}/rotate-token`);
    expect(res.status).toBe(200);
    const { token, install_command } = (await res.json()) as { token: string; install_command: string };
    expect(token).toMatch(/^mk_mach_/);
    // The line asks for the token on the machine: it holds no token, so none lands in a shell's history.
    expect(install_command).toContain(`/install.sh | sh -s -- --relay-url`);
    expect(install_command).not.toContain(token);
    await vi.waitFor(() => expect(agent.link.credentialsRejected).toBe(true), { timeout: 10_000, interval: 20 });
    await agent.stop();
    const renewed = await startAgent(
      resolveAgentConfig({ flags: { server: gw.relay.linkAddress, machineId, token, dataDir: join(gw.dataDir, `renewed-${machineId}`), threads: 1, gpu: false } }),
      { log: silentLogger() },
    );
    try {
      await renewed.link.whenOnline();
      expect((await gw.relay.store.machines.get(machineId))!.state).toBe("online");
    } finally {
      await renewed.stop();
    }
  });
});
