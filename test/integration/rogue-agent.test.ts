import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { resolveAgentConfig, startAgent, type Agent } from "../../agent/index.js";
import { GrpcDialer } from "../../agent/link/grpc-dialer.js";
import { clampUsage, seenFor } from "../../relay/link/clamp-usage.js";
import { EMPTY_STEP_RESULT, PROTOCOL_VERSION, createLogger, silentLogger, type AgentToRelay, type LinkEnd, type RelayToAgent } from "../../proto/index.js";
import { fakeAdapter } from "../fakes/fake-runtime.js";
import { runCli, startCli, stopCli } from "../helpers/cli.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";

/**
 * A machine that speaks the link's protocol by hand (through the relay's in-process dialer), to do what no
 * honest agent does: claim stacks it was not given, flood reports, overstate usage, send errors that are not
 * a runtime's, and answer without end.
 */
async function rogueAgent(gw: TestGateway, name: string, options: { ignore?: (step: string) => boolean; deploy?: boolean } = {}) {
  const { machine, token } = await gw.relay.control.machines.create(OP, { org: gw.orgId, name: name });
  const received: RelayToAgent[] = [];
  let onInfer: (m: Extract<RelayToAgent, { type: "infer" }>) => void = () => {};
  let relay: LinkEnd<AgentToRelay> | undefined;
  const send = (m: AgentToRelay) => relay!.send(m);
  // It heartbeats as an agent does (the relay drops a link silent for 3.5 heartbeats, 1.75 s here): whatever
  // else it does, its link stays up for as long as the test needs it, however slow the machine.
  let heartbeats: NodeJS.Timeout | undefined;
  relay = gw.relay.inProcessDialer({ machineId: machine.id, token })({
    send: (m) => {
      received.push(m);
      if (m.type === "welcome") heartbeats = setInterval(() => send({ type: "heartbeat", sentAtMs: Date.now() }), m.heartbeatIntervalMs);
      if (m.type === "command" && !options.ignore?.(m.step.kind)) send({ type: "result", commandId: m.commandId, result: EMPTY_STEP_RESULT });
      if (m.type === "infer") onInfer(m);
    },
    close: () => clearInterval(heartbeats),
  });
  const hardware = { platform: "linux", os: "Rogue OS", arch: "x64", cpuModel: "cpu", cpuPhysicalCores: 1, cpuLogicalCores: 1, memoryBytes: 1, gpus: [], disks: [], accelerators: [] };
  send({ type: "hello", protocolVersion: PROTOCOL_VERSION, agentVersion: "6.6.6", hardware });
  await vi.waitFor(() => expect(received.some((m) => m.type === "welcome")).toBe(true), { timeout: 5_000, interval: 10 });
  const modelId = `${name}-model`;
  const st = await gw.relay.control.stacks.create(OP, { org: gw.orgId, name: modelId, machine: machine.id, runtime: "openai", model: "http://fake.invalid/v1#rogue", modelId });
  if (options.deploy ?? true) {
    await gw.relay.control.stacks.deploy(OP, st.id);
    await gw.relay.deployer.settled(st.id);
  }
  return {
    ignore: (f: (step: string) => boolean) => (options.ignore = f), machineId: machine.id, stackId: st.id, modelId, send, received, hardware, answer: (f: typeof onInfer) => (onInfer = f) };
}

/** A chat request through the gateway with its key. */
function chatThrough(gw: TestGateway, model: string, extra: Record<string, unknown> = {}) {
  return fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hello there" }], ...extra }),
  });
}

describe("a machine that misbehaves cannot hurt the relay or mislead its clients", () => {
  let gw: TestGateway;
  const chat = (model: string, extra: Record<string, unknown> = {}) => chatThrough(gw, model, extra);
  // The relay's warnings (and the agents'), as its log writes them.
  const warnings: string[] = [];
  const written = (msg: string) => warnings.filter((line) => line.includes(`"msg":"${msg}"`)).length;
  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake", log: createLogger({ level: "warn", write: (line) => void warnings.push(line) }) });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("ignores a runtime state for a stack the relay gave another machine", async () => {
    const rogue = await rogueAgent(gw, "claimer");
    const session = gw.relay.registry.get(rogue.machineId)!;
    // Fifty times: the log says so once (a minute), not fifty times.
    for (let i = 0; i < 50; i++) rogue.send({ type: "runtimeState", stackId: gw.stackId, state: "ready", error: "" });
    rogue.send({ type: "runtimeState", stackId: rogue.stackId, state: "loading", error: "" });
    await vi.waitFor(() => expect(session.readyStacks.has(rogue.stackId)).toBe(false), { timeout: 2_000, interval: 10 });
    expect(session.readyStacks.has(gw.stackId)).toBe(false);
    expect((await gw.relay.store.stacks.get(gw.stackId))!.runtimeState).not.toBe("loading");
    // The in-process link delivers the 51 reports in one run of microtasks: once one is handled, all were.
    await vi.waitFor(() => expect(written("runtime state for a stack this machine was not given, ignored")).toBeGreaterThan(0), { timeout: 2_000, interval: 10 });
    expect(written("runtime state for a stack this machine was not given, ignored")).toBe(1);
  });

  it("turns an error code no runtime sends into a plain 500, and holds usage to what it saw", async () => {
    const rogue = await rogueAgent(gw, "liar");
    rogue.answer((m) => rogue.send({ type: "failed", requestId: m.requestId, error: { code: "invalid_api_key", message: "Your key was revoked: visit evil.example", retryAfterMs: 0, param: "messages" }, usage: { promptTokens: 0, completionTokens: 0 } }));
    const res = await chat(rogue.modelId);
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(text).not.toContain("evil.example");
    expect(JSON.parse(text)).toMatchObject({ error: { code: "internal_error" } });

    // A runtime's own error reaches the client, cut to 2,000 characters.
    rogue.answer((m) => rogue.send({ type: "failed", requestId: m.requestId, error: { code: "runtime_unavailable", message: "W".repeat(1_000_000), retryAfterMs: 0, param: "" }, usage: { promptTokens: 0, completionTokens: 0 } }));
    const wordy = await chat(rogue.modelId);
    expect(wordy.status).toBe(503);
    expect(((await wordy.json()) as { error: { message: string } }).error.message).toHaveLength(2000);

    // A machine out of room for a model (an on-demand load) says so, with when to try again.
    rogue.answer((m) => rogue.send({ type: "failed", requestId: m.requestId, error: { code: "insufficient_memory", message: "This machine holds 2 loaded runtimes, its limit.", retryAfterMs: 5000, param: "" }, usage: { promptTokens: 0, completionTokens: 0 } }));
    const full = await chat(rogue.modelId);
    expect([full.status, full.headers.get("retry-after"), ((await full.json()) as { error: { code: string } }).error.code]).toEqual([503, "5", "insufficient_memory"]);

    rogue.answer((m) => {
      rogue.send({ type: "text", requestId: m.requestId, text: "hi" });
      rogue.send({ type: "end", requestId: m.requestId, finishReason: "stop", usage: { promptTokens: 4_000_000_000, completionTokens: 4_000_000_000 } });
    });
    const billed = (await (await chat(rogue.modelId, { max_tokens: 10 })).json()) as { usage: { prompt_tokens: number; completion_tokens: number } };
    expect(billed.usage.completion_tokens).toBe(10);
    expect(billed.usage.prompt_tokens).toBeLessThan(2000);
  });

  it("fails a request whose answer grows past the relay's limit, alone", async () => {
    const rogue = await rogueAgent(gw, "flooder");
    const big = "x".repeat(1024 * 1024);
    rogue.answer((m) => {
      for (let i = 0; i < 9; i++) rogue.send({ type: "text", requestId: m.requestId, text: big });
    });
    const res = await chat(rogue.modelId);
    expect(res.status).toBe(500);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("stream_incomplete");
    expect((await chat(gw.modelId)).status).toBe(200);
  });

  it("runs a stack's deployment once when it is deployed while its machine's stacks are being looked up to resume", async () => {
    // The lookup of the stacks to resume, made as the machine links (after its credentials' own), held until the
    // stack was deployed on the link: it then finds the stack deployed, and must not deploy it again.
    const stacks = gw.relay.store.stacks;
    const listByMachine = stacks.listByMachine.bind(stacks);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const calls = new Map<string, number>();
    stacks.listByMachine = async (id) => {
      calls.set(id, (calls.get(id) ?? 0) + 1);
      if (id !== gw.machineId && calls.get(id) === 2) await held;
      return listByMachine(id);
    };
    try {
      const rogue = await rogueAgent(gw, "resumed", { deploy: false });
      await gw.relay.control.stacks.deploy(OP, rogue.stackId);
      await vi.waitFor(async () => expect((await stacks.get(rogue.stackId))!.state).toBe("deployed"), { timeout: 10_000, interval: 10 });
      release();
      await gw.relay.deployer.settled(rogue.stackId);
      expect(calls.get(rogue.machineId)).toBe(2);
      expect(rogue.received.filter((m) => m.type === "command" && m.step.kind === "pullModel")).toHaveLength(1);
    } finally {
      stacks.listByMachine = listByMachine;
      release();
    }
  });

  it("takes a machine's hardware at most every 10 s, cut to size", async () => {
    const rogue = await rogueAgent(gw, "chatty");
    const huge = { ...rogue.hardware, os: "A".repeat(100_000), gpus: Array.from({ length: 1000 }, () => ({ vendor: "V", model: "M", vramBytes: 1, driverVersion: "1" })) };
    rogue.send({ type: "hardware", hardware: huge });
    for (let i = 0; i < 20; i++) rogue.send({ type: "hardware", hardware: { ...rogue.hardware, os: `flood ${i}` } });
    // The in-process link delivers the 21 reports in one run of microtasks: once the first is stored, all were handled.
    await vi.waitFor(async () => expect((await gw.relay.store.machines.get(rogue.machineId))!.hardware!.os).toHaveLength(256), { timeout: 2_000, interval: 10 });
    const stored = (await gw.relay.store.machines.get(rogue.machineId))!.hardware!;
    expect(stored.os).toBe("A".repeat(256));
    expect(stored.gpus).toHaveLength(64);
    // The 20 reports dropped are said once in the log.
    expect(written("hardware report dropped: the last one was less than 10 s ago")).toBe(1);
  });
});

describe("a machine that floods deploy progress and runtime reports", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake" });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("has its progress stored and announced at most every 200 ms, and its runtime errors cut to 2,000 characters", async () => {
    const rogue = await rogueAgent(gw, "noisy", { ignore: (step) => step === "pullModel", deploy: false });
    let announced = 0;
    const unsubscribe = gw.relay.events.subscribe((e) => e.type === "stack" && e.stackId === rogue.stackId && announced++);
    await gw.relay.control.stacks.deploy(OP, rogue.stackId);
    await vi.waitFor(() => expect(rogue.received.some((m) => m.type === "command" && m.step.kind === "pullModel")).toBe(true), { timeout: 20_000, interval: 10 });
    const pull = rogue.received.find((m): m is Extract<RelayToAgent, { type: "command" }> => m.type === "command" && m.step.kind === "pullModel")!;
    const before = announced;
    const stored = vi.spyOn(gw.relay.store.deployments, "stepDetail");
    const startedAt = Date.now();
    for (let i = 0; i < 5000; i++) rogue.send({ type: "progress", commandId: pull.commandId, progress: { stage: "downloading", doneBytes: i, totalBytes: 5000, bytesPerSecond: 1, etaSeconds: 1 } });
    // The in-process link delivers them in one run of microtasks: once one is stored, all 5,000 were handled.
    await vi.waitFor(() => expect(stored).toHaveBeenCalled(), { timeout: 20_000, interval: 10 });
    // One is kept per 200 ms the flood lasted (on a loaded machine, 5,000 reports may take longer than one period).
    const periods = () => Math.floor((Date.now() - startedAt) / 200) + 1;
    const writes = stored.mock.calls.length;
    stored.mockRestore();
    expect(writes).toBeLessThanOrEqual(periods());
    await vi.waitFor(() => expect(announced - before).toBeGreaterThan(0), { timeout: 20_000, interval: 10 });
    expect(announced - before).toBeLessThanOrEqual(periods());
    rogue.send({ type: "result", commandId: pull.commandId, result: EMPTY_STEP_RESULT });
    await gw.relay.deployer.settled(rogue.stackId);
    unsubscribe();

    rogue.send({ type: "runtimeState", stackId: rogue.stackId, state: "failed", error: "E".repeat(1_000_000) });
    await vi.waitFor(async () => expect(await gw.relay.store.stacks.get(rogue.stackId)).toMatchObject({ runtimeState: "failed", runtimeError: "E".repeat(2000) }), { timeout: 10_000, interval: 10 });
  });

  it("has a flood of runtime states stored and announced only as they change, the latest at most every 250 ms, and its metrics taken once a second", async () => {
    const rogue = await rogueAgent(gw, "flooding");
    const writes = vi.spyOn(gw.relay.store.stacks, "setRuntimeState");
    let announced = 0;
    const unsubscribe = gw.relay.events.subscribe((e) => e.type === "stack" && e.stackId === rogue.stackId && announced++);
    try {
      // 10,000 states, most the same, the rest flapping; then the last word: failed.
      for (let i = 0; i < 10_000; i++) rogue.send({ type: "runtimeState", stackId: rogue.stackId, state: i % 1000 === 999 ? "loading" : "ready", error: "" });
      rogue.send({ type: "runtimeState", stackId: rogue.stackId, state: "failed", error: "out of memory" });
      for (let i = 0; i < 5_000; i++) rogue.send({ type: "metrics", stacks: [{ stackId: rogue.stackId, requests: i, failed: 0, promptTokens: 0, completionTokens: 0, inFlight: 0, waitingForCredit: 0 }] });
      await vi.waitFor(async () => expect((await gw.relay.store.stacks.get(rogue.stackId))!.runtimeState).toBe("failed"), { timeout: 3_000, interval: 20 });
      // Routing knew at once: the failed runtime takes no requests.
      expect((await chatThrough(gw, rogue.modelId)).status).toBe(503);
      expect(writes.mock.calls.length).toBeLessThanOrEqual(2);
      expect(announced).toBeLessThanOrEqual(2);
      // The first of the 5,000 reports (0 requests) is what /metrics shows: the others came within the second.
      const scraped = await (await fetch(`${gw.relay.url}/metrics`, { headers: { authorization: `Bearer ${gw.relay.adminToken}` } })).text();
      expect(scraped).toContain(`makina_runtime_requests_total{machine_id="${rogue.machineId}",stack_id="${rogue.stackId}"} 0`);
    } finally {
      unsubscribe();
      writes.mockRestore();
    }
  });

  it("keeps a machine's version to a size a person reads", async () => {
    const { machine, token } = await gw.relay.control.machines.create(OP, { org: gw.orgId, name: "verbose" });
    const received: RelayToAgent[] = [];
    const relay = gw.relay.inProcessDialer({ machineId: machine.id, token })({ send: (m) => received.push(m), close: () => {} });
    const hardware = { platform: "linux", os: "OS", arch: "x64", cpuModel: "cpu", cpuPhysicalCores: 1, cpuLogicalCores: 1, memoryBytes: 1, gpus: [], disks: [], accelerators: [] };
    relay.send({ type: "hello", protocolVersion: PROTOCOL_VERSION, agentVersion: "9".repeat(1_000_000), hardware });
    await vi.waitFor(async () => expect((await gw.relay.store.machines.get(machine.id))!.agentVersion).toHaveLength(64), { timeout: 3_000, interval: 20 });
    relay.close("done");
  });
});

describe("a machine that never finishes a deployment step", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake", relayFlags: { deployStepTimeoutMs: 300 } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("fails the deployment with the reason once the step has been silent too long, and does not block the next one", async () => {
    const rogue = await rogueAgent(gw, "stuck", { ignore: (step) => step === "pullModel" });
    const failed = await gw.relay.control.stacks.get(OP, rogue.stackId);
    expect(failed.state).toBe("failed");
    expect(failed.stateError).toBe("The machine reported nothing of the pullModel step for 300 ms; it was given up.");
    rogue.ignore(() => false);
    await gw.relay.control.stacks.deploy(OP, rogue.stackId);
    await gw.relay.deployer.settled(rogue.stackId);
    expect((await gw.relay.control.stacks.get(OP, rogue.stackId)).state).toBe("deployed");
  });
});

describe("undeploying a stack whose deployment is still running", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake" });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("stops the deployment on the relay and on the machine first, then removes the stack: nothing of it lands after", async () => {
    const rogue = await rogueAgent(gw, "halfway", { ignore: (step) => step === "pullModel", deploy: false });
    await gw.relay.control.stacks.deploy(OP, rogue.stackId);
    await vi.waitFor(() => expect(rogue.received.some((m) => m.type === "command" && m.step.kind === "pullModel")).toBe(true), { timeout: 5_000, interval: 10 });
    const undeployed = await gw.relay.deployer.undeploy(rogue.stackId);
    expect(undeployed.state).toBe("draft");
    const sent = rogue.received.filter((m) => m.type === "command" || m.type === "cancelCommand");
    const pull = sent.find((m) => m.type === "command" && m.step.kind === "pullModel")!;
    expect(sent.map((m) => (m.type === "command" ? m.step.kind : `cancel ${m.commandId === (pull as { commandId: string }).commandId ? "pull" : "other"}`))).toEqual([
      "installRuntime",
      "pullModel",
      "cancel pull",
      "removeStack",
    ]);
    const view = await gw.relay.control.stacks.get(OP, rogue.stackId);
    expect(view.deployment?.error).toBe("The stack was undeployed during its deployment.");
  });
});

describe("usage an agent reports", () => {
  const seen = { chunks: 3, chars: 10, bytes: 10, promptChars: 100, messages: 2, maxTokens: 0, steps: 1 };
  it("stays as reported while it fits what the relay saw", () => {
    const usage = { promptTokens: 30, completionTokens: 3 };
    expect(clampUsage(usage, seen)).toBe(usage);
  });
  it("counts the bytes of what arrived, not its characters: a chunk of text in a script of several tokens a character keeps its tokens", () => {
    // 100 CJK characters (300 bytes of UTF-8) in one chunk, decoded as 140 tokens.
    const usage = { promptTokens: 30, completionTokens: 140 };
    expect(clampUsage(usage, { ...seen, chunks: 1, chars: 100, bytes: 300 })).toBe(usage);
  });
  it("is held to max_tokens, to what arrived plus the decode-ahead, and to the prompt's size", () => {
    expect(clampUsage({ promptTokens: 1e9, completionTokens: 1e9 }, seen)).toEqual({ promptTokens: 100 + 64 + 1024, completionTokens: 10 + 3 + 64 });
    expect(clampUsage({ promptTokens: 5, completionTokens: 50 }, { ...seen, maxTokens: 7 })).toEqual({ promptTokens: 5, completionTokens: 7 });
    expect(clampUsage({ promptTokens: -5, completionTokens: Number.NaN }, seen)).toEqual({ promptTokens: 0, completionTokens: 0 });
  });
  it("charges no completion to a request that generates nothing (embeddings, rerank, a count), whatever the agent says", () => {
    const rerank = seenFor({ messages: [], temperature: 1, topP: 1, maxTokens: 1, stop: [], presencePenalty: 0, frequencyPenalty: 0, stream: false, rerank: { query: "a cat", documents: ["the cat sat", "a dog"] } }, 1);
    expect(clampUsage({ promptTokens: 12, completionTokens: 1 }, rerank)).toEqual({ promptTokens: 12, completionTokens: 0 });
    // Its prompt is held to the query read with each document.
    expect(clampUsage({ promptTokens: 1e9, completionTokens: 0 }, rerank).promptTokens).toBe(2 * 5 + 11 + 5 + 32 * 2 + 1024);
  });
  it("allows an orchestrated request each of its steps: max_tokens per step, the prompt per step plus what earlier steps wrote", () => {
    const refine = { ...seen, maxTokens: 20, steps: 3 };
    const usage = { promptTokens: 400, completionTokens: 55 };
    expect(clampUsage(usage, refine)).toBe(usage);
    expect(clampUsage({ promptTokens: 1e9, completionTokens: 1e9 }, refine)).toEqual({ promptTokens: 3 * (100 + 64 + 1024) + 60, completionTokens: 60 });
  });
});

/**
 * A machine flooding a relay process over gRPC with answers that never end: the relay runs with its heap capped
 * at 192 MiB (V8 would abort it past that), takes 40 floods of 9 MiB each (360 MiB in all, 8 of them at once),
 * fails each alone at the answer limit, keeps serving an honest machine throughout, and is still alive after.
 */
describe("a machine flooding a relay process over gRPC", () => {
  let dir: string;
  let relay: ChildProcess;
  let honest: Agent | undefined;
  let rogueLink: LinkEnd<AgentToRelay> | undefined;
  let rogueBeat: NodeJS.Timeout | undefined;
  let rogueDialer: GrpcDialer | undefined;
  afterAll(async () => {
    clearInterval(rogueBeat);
    rogueLink?.close("test over");
    rogueDialer?.close();
    await honest?.stop();
    if (relay) await stopCli(relay);
    rmSync(dir, { recursive: true, force: true });
  });

  it("fails each flooded request alone at the answer limit, keeps serving others, and stays within a fixed heap", async () => {
    dir = mkdtempSync(join(tmpdir(), "makina-flood-"));
    const dataDir = join(dir, "relay");
    relay = (await startCli(["relay", "--data-dir", dataDir, "--port", "0", "--grpc-port", "0", "--grpc-host", "127.0.0.1"], /agents dial/, { NODE_OPTIONS: "--max-old-space-size=192" })).child;
    let exited = false;
    relay.once("exit", () => (exited = true));
    const admin = async (...args: string[]) => {
      const r = await runCli(["admin", ...args, "--data-dir", dataDir, "--json"]);
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as Record<string, string>;
    };
    const info = JSON.parse(readFileSync(join(dataDir, "relay.json"), "utf8")) as { url: string; link_address: string };
    const org = (await admin("org", "create", "Flood Co")).slug!;
    const key = (await admin("key", "create", "--org", org, "--name", "k")).key!;

    // The rogue: answers every deploy step, then floods every request with 1 MiB chunks without end.
    const rogue = await admin("machine", "create", "--org", org, "--name", "rogue");
    const big = "x".repeat(1024 * 1024);
    const dialer = (rogueDialer = new GrpcDialer(info.link_address, { machineId: rogue.id!, token: rogue.token! }, { caSha256: null, caCacheFile: join(dir, "ca.pem"), caFile: null, tls: false }));
    let welcomed = false;
    rogueLink = dialer.dial({
      send: (m: RelayToAgent) => {
        if (m.type === "welcome") welcomed = true;
        if (m.type === "command") rogueLink!.send({ type: "result", commandId: m.commandId, result: EMPTY_STEP_RESULT });
        if (m.type === "infer") for (let i = 0; i < 9; i++) rogueLink!.send({ type: "text", requestId: m.requestId, text: big });
      },
      close: () => {},
    });
    rogueLink.send({ type: "hello", protocolVersion: PROTOCOL_VERSION, agentVersion: "6.6.6", hardware: { platform: "linux", os: "Rogue OS", arch: "x64", cpuModel: "cpu", cpuPhysicalCores: 1, cpuLogicalCores: 1, memoryBytes: 1, gpus: [], disks: [], accelerators: [] } });
    await vi.waitFor(() => expect(welcomed).toBe(true), { timeout: 5_000, interval: 10 });
    // Its link stays up as any agent's does (between floods it is idle for as long as the CLI calls below take).
    rogueBeat = setInterval(() => rogueLink!.send({ type: "heartbeat", sentAtMs: Date.now() }), 500);
    const flooded = await admin("stack", "create", "--org", org, "--name", "flood", "--machine", rogue.id!, "--runtime", "openai", "--model", "http://fake.invalid/v1#rogue", "--model-id", "flood");
    await admin("stack", "deploy", flooded.id!, "--wait");

    // An honest machine beside it, served by the stand-in model.
    const good = await admin("machine", "create", "--org", org, "--name", "honest");
    honest = await startAgent(resolveAgentConfig({ flags: { server: info.link_address, machineId: good.id!, token: good.token!, dataDir: join(dir, "agent"), threads: 1, gpu: false } }), {
      log: silentLogger(),
      adapters: { openai: fakeAdapter() },
    });
    await honest.link.whenOnline();
    const served = await admin("stack", "create", "--org", org, "--name", "good", "--machine", good.id!, "--runtime", "openai", "--model", "http://fake.invalid/v1#fake", "--model-id", "good");
    await admin("stack", "deploy", served.id!, "--wait");

    const chat = (model: string) =>
      fetch(`${info.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model, messages: [{ role: "user", content: "hello there" }] }),
      }).then(async (r) => [r.status, ((await r.json()) as { error?: { code: string } }).error?.code ?? "ok"]);
    for (let round = 0; round < 5; round++) {
      const answers = await Promise.all([...Array.from({ length: 8 }, () => chat("flood")), chat("good")]);
      expect(answers).toEqual([...Array(8).fill([500, "stream_incomplete"]), [200, "ok"]]);
    }
    expect(exited).toBe(false);
    expect(await chat("good")).toEqual([200, "ok"]);
  });
});
