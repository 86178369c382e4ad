import { credentials, Metadata } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { encodeAgentMessage } from "../../agent/link/agent-link-codec.js";
import { EMPTY_STEP_RESULT, AUTHORIZATION_METADATA, MACHINE_ID_METADATA, PROTOCOL_VERSION, type AgentToRelay } from "../../proto/index.js";
import { AgentLinkClient, type RelayMessage } from "../../proto/wire.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";

/**
 * A machine that stops reading its link (a hung agent, a saturated uplink): it speaks raw gRPC, answers its
 * deploy, keeps heartbeating, then pauses reading. What the relay writes to it piles up; past 4 MiB the
 * relay gives it no new requests, and serves the other machines as before; once it reads again, it is routed to.
 */
describe("a machine whose link stops draining", () => {
  let gw: TestGateway;
  let client: AgentLinkClient | undefined;
  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake", relayFlags: { firstTokenTimeoutMs: 200 } });
  });
  afterAll(async () => {
    client?.close();
    await gw?.close();
  });

  it("gets no new requests (503, short Retry-After) while it does not read, and others are served throughout", async () => {
    const { machine, token } = await gw.relay.control.machines.create(OP, { org: gw.orgId, name: "stalled" });
    client = new AgentLinkClient(gw.relay.linkAddress, credentials.createInsecure());
    const metadata = new Metadata();
    metadata.set(MACHINE_ID_METADATA, machine.id);
    metadata.set(AUTHORIZATION_METADATA, `Bearer ${token}`);
    const call = client.connect(metadata);
    const send = (m: AgentToRelay) => call.write(encodeAgentMessage(m));
    call.on("data", (m: RelayMessage) => {
      if (m.body?.$case === "command") send({ type: "result", commandId: m.body.value.commandId, result: EMPTY_STEP_RESULT });
    });
    call.on("error", () => {});
    send({ type: "hello", protocolVersion: PROTOCOL_VERSION, agentVersion: "stalled", hardware: { platform: "linux", os: "Stalled", arch: "x64", cpuModel: "cpu", cpuPhysicalCores: 1, cpuLogicalCores: 1, memoryBytes: 1, gpus: [], disks: [], accelerators: [] } });
    const beat = setInterval(() => send({ type: "heartbeat", sentAtMs: Date.now() }), 200);
    try {
      await vi.waitFor(() => expect(gw.relay.registry.get(machine.id)).toBeDefined(), { timeout: 5_000, interval: 10 });
      const stack = await gw.relay.control.stacks.create(OP, { org: gw.orgId, name: "stalled-model", machine: machine.id, runtime: "openai", model: "http://fake.invalid/v1#x", modelId: "stalled-model" });
      await gw.relay.control.stacks.deploy(OP, stack.id);
      await gw.relay.deployer.settled(stack.id);
      const session = gw.relay.registry.get(machine.id)!;
      expect([(await gw.relay.control.stacks.get(OP, stack.id)).state, session.congested]).toEqual(["deployed", false]);

      // It stops reading. Requests sent its way (straight on the link: each an infer, then a cancel when no first
      // token comes) pile up in the relay's write buffer for it: 40 of 200 KB, 8 MB, counted in bytes (as
      // messages, 80 are nothing).
      call.pause();
      const input = { messages: [{ role: "user" as const, content: "x".repeat(200_000) }], temperature: 1, topP: 1, maxTokens: 1, stop: [], presencePenalty: 0, frequencyPenalty: 0, stream: false };
      for (let i = 0; i < 40; i++) {
        void session.infer(stack.id, input).next().catch(() => {});
        // Let the link write what it can between requests.
        await new Promise((r) => setImmediate(r));
      }
      await vi.waitFor(() => expect(session.congested).toBe(true), { timeout: 10_000, interval: 20 });

      const chat = (model: string) =>
        fetch(`${gw.baseURL}/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
          body: JSON.stringify({ model, messages: [{ role: "user", content: "hello there" }] }),
        });
      const refused = await chat("stalled-model");
      expect([refused.status, refused.headers.get("retry-after")]).toEqual([503, "1"]);
      expect(((await refused.json()) as { error: { message: string } }).error.message).toBe("The machine serving this model is not keeping up with its link. Retry shortly.");
      const served = await chat(gw.modelId);
      expect(served.status).toBe(200);
      // The link stays up (it still heartbeats), and the machine online.
      expect(gw.relay.registry.get(machine.id)).toBe(session);

      // It reads again: the backlog drains, and the machine is a target again.
      call.resume();
      await vi.waitFor(() => expect(session.congested).toBe(false), { timeout: 10_000, interval: 20 });
    } finally {
      clearInterval(beat);
      call.cancel();
    }
  });
});
