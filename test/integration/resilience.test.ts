import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Agent } from "../../agent/index.js";
import { fetchAgentStatus } from "../../cli/agent-client.js";
import { startCli, stopCli } from "../helpers/cli.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";
import { isAlive } from "../helpers/processes.js";

const post = (gw: TestGateway, body: Record<string, unknown>, signal?: AbortSignal) =>
  fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ messages: [{ role: "user", content: "Once upon a time" }], ...body }),
    signal,
  });

/**
 * Holds one request on a machine: its consumer reads one chunk and stops, so the agent waits for credit, and the
 * model process decodes no further once what the link and the process buffer is full (GGUF_WINDOW's bytes and
 * the link's credit: a few hundred of the test model's tokens). It asks for far more tokens than that, so that
 * it is still decoding, holding its sequence, until it is released (a context of 2,048 takes the 1,900 asked by default).
 */
async function holdRequest(gw: TestGateway, machineId: string, stackId: string, agent: Agent, maxTokens = 1900) {
  const session = gw.relay.registry.get(machineId)!;
  const events = session.infer(stackId, { messages: [{ role: "user", content: "Tell me a long story" }], temperature: 0, topP: 1, maxTokens, stop: [], presencePenalty: 0, frequencyPenalty: 0, stream: true });
  await events.next();
  await vi.waitFor(() => expect(agent.inference.stalled).toBeGreaterThan(0), { timeout: 10_000, interval: 10 });
  return () => events.return(undefined);
}

describe("when runtimes are busy, crash or vanish", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    // Each token its own chunk, so that a request whose consumer stops reading is held at the link's window (holdRequest).
    gw = await startTestGateway({ relayFlags: { firstTokenTimeoutMs: 500 }, agentFlags: { parallelSequences: 1, maxContextSize: 2048, streamIntervalMs: 0 } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("answers 503 runtime_unavailable with Retry-After when no first token comes in time", async () => {
    const release = await holdRequest(gw, gw.machineId, gw.stackId, gw.agent);
    try {
      const res = await post(gw, { model: gw.modelId, max_tokens: 2 });
      expect(res.status).toBe(503);
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(((await res.json()) as { error: { code: string; type: string } }).error).toMatchObject({ type: "service_unavailable_error", code: "runtime_unavailable" });
    } finally {
      await release();
    }
    await vi.waitFor(() => expect(gw.agent.inference.inFlight).toBe(0), { timeout: 5_000, interval: 10 });
    // Served again once the machine is free (on a loaded machine a first token may itself miss the 500 ms: asked again).
    await vi.waitFor(async () => expect((await post(gw, { model: gw.modelId, max_tokens: 2 })).status).toBe(200), { timeout: 30_000, interval: 200 });
  });

  it("answers 503 runtime_unavailable when the runtime is gone from the machine", async () => {
    const stackId = await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: "fragile" });
    await gw.agent.host.run(stackId, { kind: "removeStack" }, () => {});
    const res = await post(gw, { model: "fragile", max_tokens: 2 });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("runtime_unavailable");
  });

  it("stops generating on the machine when the HTTP client goes away", async () => {
    const canceledBefore = gw.agent.inference.canceled;
    const controller = new AbortController();
    const res = await post(gw, { model: gw.modelId, max_tokens: 1900, stream: true }, controller.signal);
    const reader = res.body!.getReader();
    await reader.read();
    controller.abort();
    await vi.waitFor(() => expect(gw.agent.inference.inFlight).toBe(0), { timeout: 5_000, interval: 10 });
    // Ended by the cancel, not by running to max_tokens.
    expect(gw.agent.inference.canceled).toBe(canceledBefore + 1);
    expect(gw.relay.registry.get(gw.machineId)!.inFlight).toBe(0);
  });

  it("stops generating when the client of a non-streamed request goes away", async () => {
    const canceledBefore = gw.agent.inference.canceled;
    const controller = new AbortController();
    const pending = post(gw, { model: gw.modelId, max_tokens: 1900 }, controller.signal).catch((e: unknown) => e);
    await vi.waitFor(() => expect(gw.agent.inference.inFlight).toBe(1), { timeout: 5_000, interval: 5 });
    controller.abort();
    expect(await pending).toBeInstanceOf(Error);
    await vi.waitFor(() => expect(gw.agent.inference.inFlight).toBe(0), { timeout: 5_000, interval: 10 });
    expect(gw.agent.inference.canceled).toBe(canceledBefore + 1);
  });

  it("charges a key's token limit for what a cut-short stream generated, not for its estimate", async () => {
    const { key } = await gw.relay.control.keys.create(OP, gw.orgId, { tpm: 100_000 });
    const controller = new AbortController();
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 1900, stream: true }),
      signal: controller.signal,
    });
    const estimated = 100_000 - Number(res.headers.get("x-ratelimit-remaining-tokens"));
    expect(estimated).toBeGreaterThan(1900);
    await res.body!.getReader().read();
    controller.abort();
    const remaining = async () => Number((await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${key}` } })).headers.get("x-ratelimit-remaining-tokens"));
    await vi.waitFor(async () => expect(await remaining()).toBeGreaterThan(100_000 - estimated), { timeout: 5_000, interval: 20 });
    const charged = 100_000 - (await remaining());
    expect(charged).toBeGreaterThan(0);
    expect(charged).toBeLessThan(1900);
  });
});

describe("a GGUF model that crashes", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("does not take the agent down: its process is restarted and serves again", async () => {
    // Served once before: the agent keeps that connection to the model process open, and must not reuse it.
    expect((await post(gw, { model: gw.modelId, max_tokens: 3 })).status).toBe(200);
    const [runtime] = gw.agent.host.list();
    const pid = runtime!.pid!;
    process.kill(pid, "SIGKILL");
    await vi.waitFor(
      () => {
        const now = gw.agent.host.list()[0]!;
        expect(now.pid).not.toBe(pid);
        expect(now.state).toBe("ready");
      },
      { timeout: 20_000, interval: 50 },
    );
    expect(gw.agent.link.state).toBe("online");
    await vi.waitFor(() => expect(gw.relay.registry.get(gw.machineId)!.readyStacks.has(gw.stackId)).toBe(true), { timeout: 5_000, interval: 20 });
    const res = await post(gw, { model: gw.modelId, max_tokens: 3 });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(3);
  });
});

describe("a GGUF model process that is alive but wedged", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ agentFlags: { healthIntervalMs: 100, healthTimeoutMs: 500 } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("is taken out of routing (503 runtime_unavailable), restarted, and serves again", async () => {
    const [runtime] = gw.agent.host.list();
    const pid = runtime!.pid!;
    // SIGSTOP freezes the process: it keeps its socket but answers nothing, like a deadlock or a hung driver.
    process.kill(pid, "SIGSTOP");
    await vi.waitFor(() => expect(gw.relay.registry.get(gw.machineId)!.readyStacks.has(gw.stackId)).toBe(false), { timeout: 10_000, interval: 10 });
    const meanwhile = await post(gw, { model: gw.modelId, max_tokens: 3 });
    expect(meanwhile.status).toBe(503);
    expect(((await meanwhile.json()) as { error: { code: string } }).error.code).toBe("runtime_unavailable");
    await vi.waitFor(
      () => {
        const now = gw.agent.host.list()[0]!;
        expect([now.state, now.pid === pid]).toEqual(["ready", false]);
      },
      { timeout: 20_000, interval: 50 },
    );
    await vi.waitFor(() => expect(gw.relay.registry.get(gw.machineId)!.readyStacks.has(gw.stackId)).toBe(true), { timeout: 5_000, interval: 20 });
    const res = await post(gw, { model: gw.modelId, max_tokens: 3 });
    expect(res.status).toBe(200);
  });
});

describe("routing across machines serving one model id", () => {
  let gw: TestGateway;
  let second: { machineId: string; agent: Agent };
  let secondStack: string;
  beforeAll(async () => {
    gw = await startTestGateway({ agentFlags: { parallelSequences: 2, streamIntervalMs: 0 } });
    second = await gw.addMachine(gw.orgId);
    secondStack = await gw.addStack({ orgId: gw.orgId, machineId: second.machineId, modelId: gw.modelId });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("lists the shared model id once", async () => {
    const res = await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${gw.apiKey}` } });
    expect(((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id)).toEqual([gw.modelId]);
  });

  it("sends a request to the machine with the fewest requests in flight", async () => {
    // Held in flight: its tokens are what the machine's context of 512 leaves.
    const release = await holdRequest(gw, gw.machineId, gw.stackId, gw.agent, 480);
    try {
      const before = { first: gw.agent.inference.chunksSent, second: second.agent.inference.chunksSent };
      for (let i = 0; i < 3; i++) expect((await post(gw, { model: gw.modelId, max_tokens: 3 })).status).toBe(200);
      expect(gw.agent.inference.chunksSent).toBe(before.first);
      expect(second.agent.inference.chunksSent).toBeGreaterThan(before.second);
    } finally {
      await release();
    }
  });

  it("skips an offline machine, and answers 503 machine_offline only when none is online", async () => {
    await second.agent.stop();
    await vi.waitFor(() => expect(gw.relay.registry.get(second.machineId)).toBeUndefined(), { timeout: 5_000, interval: 10 });
    expect((await post(gw, { model: gw.modelId, max_tokens: 2 })).status).toBe(200);
    await gw.agent.stop();
    await vi.waitFor(() => expect(gw.relay.registry.get(gw.machineId)).toBeUndefined(), { timeout: 5_000, interval: 10 });
    const res = await post(gw, { model: gw.modelId, max_tokens: 2 });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("machine_offline");
    expect(secondStack).toMatch(/^stk_/);
    await gw.restartAgent();
  });
});

describe("a machine killed in the middle of a stream", () => {
  let gw: TestGateway;
  let agentProcess: ChildProcess | undefined;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(async () => {
    if (agentProcess) await stopCli(agentProcess);
    await gw?.close();
  });

  let doomedSocket = "";
  let doomedRuntimePid = 0;
  const fetchStatusOf = async (socket: string) => (await fetchAgentStatus([socket]))?.runtimes;

  it("ends the stream with a stream_incomplete error event and no [DONE]", async () => {
    const { machine, token } = await gw.relay.control.machines.create(OP, { org: gw.orgId, name: "doomed" });
    agentProcess = (
      await startCli(["agent", "--server", gw.relay.linkAddress, "--machine-id", machine.id, "--token", token, "--data-dir", join(gw.dataDir, "doomed"), "--threads", "1"], /link online/, {
        MAKINA_AGENT_GPU: "false",
        MAKINA_AGENT_MAX_CONTEXT: "2048",
        MAKINA_LOG_LEVEL: "info",
      })
    ).child;
    await gw.addStack({ orgId: gw.orgId, machineId: machine.id, modelId: "doomed" });
    doomedSocket = join(gw.dataDir, "doomed", "agent.sock");
    doomedRuntimePid = (await fetchStatusOf(doomedSocket))![0]!.pid!;
    const res = await post(gw, { model: "doomed", max_tokens: 1800, stream: true });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value);
    agentProcess.kill("SIGKILL");
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    const events = text.split("\n\n").filter(Boolean);
    expect(events.at(-1)).not.toBe("data: [DONE]");
    expect(JSON.parse(events.at(-1)!.slice(6))).toEqual({ error: { message: expect.any(String), type: "server_error", param: null, code: "stream_incomplete" } });
    expect(text).not.toContain("[DONE]");
    // The killed agent's model process does not live on as an orphan.
    const [runtime] = (await fetchStatusOf(doomedSocket)) ?? [];
    expect(runtime).toBeUndefined();
    await vi.waitFor(() => expect(isAlive(doomedRuntimePid)).toBe(false), { timeout: 10_000, interval: 50 });
  });
});
