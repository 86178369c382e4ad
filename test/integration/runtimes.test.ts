import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { spawn, type ChildProcess } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { resolveAgentConfig, startAgent, type Agent } from "../../agent/index.js";
import { freePort } from "../../agent/supervisor/index.js";
import { createLogger, silentLogger, type Logger } from "../../proto/index.js";
import { runCli } from "../helpers/cli.js";
import { fixtureSource, type MachineKind } from "../helpers/hardware-fixtures.js";
import { REPO_ROOT } from "../helpers/models.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";
import { isAlive } from "../helpers/processes.js";

// vLLM and MLX cannot run on the CI machine: these tests use stand-in executables (test/fixtures/standins)
// that behave like `python3 -m venv`, `pip install`, `vllm serve` and `mlx_lm.server` (same flags, same
// endpoints), and hardware fixtures for an NVIDIA server and an Apple-silicon Mac.
const STANDINS = join(REPO_ROOT, "test", "fixtures", "standins");

describe("runtimes beyond GGUF, supervised by the agent", () => {
  let gw: TestGateway;
  let client: OpenAI;
  let log: string;
  const agents: Agent[] = [];
  let existing: ChildProcess | undefined;

  async function machine(kind: MachineKind, name: string, flags: Record<string, unknown> = {}, log: Logger = silentLogger()) {
    const { machine: m, token } = await gw.relay.control.machines.create(OP, { org: gw.orgId, name: name });
    const agent = await startAgent(
      resolveAgentConfig({ flags: { server: gw.relay.linkAddress, machineId: m.id, token, dataDir: join(gw.dataDir, name), threads: 1, gpu: false, python: join(STANDINS, "python3"), ...flags }, env: process.env }),
      { log, hardwareSource: fixtureSource(kind) },
    );
    agents.push(agent);
    await agent.link.whenOnline();
    return { machineId: m.id, agent };
  }

  async function deploy(machineId: string, runtime: "vllm" | "mlx" | "openai", model: string, modelId: string) {
    const stack = await gw.relay.control.stacks.create(OP, { org: gw.orgId, name: modelId, machine: machineId, runtime, model, modelId });
    await gw.relay.control.stacks.deploy(OP, stack.id);
    await gw.relay.deployer.settled(stack.id);
    return await gw.relay.control.stacks.get(OP, stack.id);
  }

  beforeAll(async () => {
    // Secrets in the agent's own environment, which no runtime may see.
    process.env.MAKINA_AGENT_TOKEN = "mk_mach_InTheAgentsEnvironment000";
    process.env.HUGGING_FACE_HUB_TOKEN = "hf_InTheAgentsEnvironment000000000";
    gw = await startTestGateway();
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
    log = join(mkdtempSync(join(tmpdir(), "makina-standin-")), "calls.log");
    writeFileSync(log, "");
    process.env.STANDIN_LOG = log;
    process.env.STANDIN_WORD_MS = "20";
  });
  afterAll(async () => {
    existing?.kill();
    await Promise.all(agents.map((a) => a.stop()));
    await gw?.close();
    delete process.env.STANDIN_LOG;
    delete process.env.MAKINA_AGENT_TOKEN;
    delete process.env.HUGGING_FACE_HUB_TOKEN;
    delete process.env.STANDIN_WORD_MS;
    delete process.env.STANDIN_EXIT_AFTER_MS;
  });

  it("installs vLLM into a virtual environment with pip, runs `vllm serve`, and serves through the gateway", async () => {
    const { machineId, agent } = await machine("nvidia-linux", "gpu-box", { allowedMediaDomains: "images.example.com" });
    const stack = await deploy(machineId, "vllm", "hf:Qwen/Qwen2.5-0.5B-Instruct", "qwen-vllm");
    expect(stack.state).toBe("deployed");
    expect(stack.deployment!.steps.map((s) => s.state)).toEqual(["succeeded", "succeeded", "succeeded"]);
    const calls = readFileSync(log, "utf8");
    expect(calls).toMatch(/python -m venv .*gpu-box\/runtimes\/vllm\/venv/);
    // The version the docs name, pinned.
    expect(calls).toContain("python -m pip install --upgrade vllm==0.20.0");
    // The server's environment holds none of the agent's secrets; the hub's address, as it downloads the repository itself.
    expect(calls).toContain("env secrets=none hf_token=- hf_endpoint=https://huggingface.co");
    // Held to the hosts this machine's operator allows images from.
    expect(calls).toMatch(/serve Qwen\/Qwen2\.5-0\.5B-Instruct --host 127\.0\.0\.1 --port \d+ --served-model-name qwen-vllm --allowed-media-domains images\.example\.com --scheduling-policy priority/);

    const res = await client.chat.completions.create({ model: "qwen-vllm", messages: [{ role: "user", content: "Hello there" }] });
    expect(res.choices[0]!.message.content).toBe("You said: Hello there");
    expect(res.usage).toMatchObject({ completion_tokens: 4 });
    let streamed = "";
    for await (const c of await client.chat.completions.create({ model: "qwen-vllm", messages: [{ role: "user", content: "one two" }], stream: true })) streamed += c.choices[0]?.delta.content ?? "";
    expect(streamed).toBe("You said: one two");
    // Scheduled by priority: each request carries its service tier's (0 priority, 1 default, 2 flex).
    expect(readFileSync(log, "utf8").trim().split("\n").filter((l) => l.startsWith("request qwen-vllm")).slice(-2)).toEqual(["request qwen-vllm stream=false priority=1", "request qwen-vllm stream=true priority=1"]);
    const flex = await client.chat.completions.create({ model: "qwen-vllm", messages: [{ role: "user", content: "later" }], service_tier: "flex" });
    expect([flex.service_tier, readFileSync(log, "utf8").trim().split("\n").at(-1)]).toEqual(["flex", "request qwen-vllm stream=false priority=2"]);
    const urgent = new OpenAI({ baseURL: gw.baseURL, apiKey: (await gw.relay.control.keys.create(OP, gw.orgId, { name: "urgent", serviceTier: "priority" })).key, maxRetries: 0 });
    const first = await urgent.chat.completions.create({ model: "qwen-vllm", messages: [{ role: "user", content: "now" }] });
    expect([first.service_tier, readFileSync(log, "utf8").trim().split("\n").at(-1)]).toEqual(["priority", "request qwen-vllm stream=false priority=0"]);
    expect(agent.host.list()).toEqual([expect.objectContaining({ runtime: "vllm", state: "ready", endpoint: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/v1$/), modelId: "qwen-vllm" })]);
    // Only the agent can use it: a key made at its start, in its environment (not its arguments), which another
    // user of the machine calling its port does not have.
    expect(calls).toContain("api_key=set");
    const endpoint = agent.host.list()[0]!.endpoint;
    const direct = await fetch(`${endpoint}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "qwen-vllm", messages: [{ role: "user", content: "hi" }] }) });
    expect(direct.status).toBe(401);
  });

  it("gives vLLM the context a stack asks for (--max-model-len), restarting it", async () => {
    const stack = (await gw.relay.control.stacks.records(OP, gw.orgId)).find((s) => s.modelId === "qwen-vllm")!;
    const edited = await gw.relay.control.stacks.update(OP, stack.id, { maxContext: 8192 });
    expect(edited).toMatchObject({ changed: ["max_context"], redeployed: true });
    await gw.relay.deployer.settled(stack.id);
    expect(await gw.relay.control.stacks.get(OP, stack.id)).toMatchObject({ state: "deployed", maxContext: 8192 });
    expect(readFileSync(log, "utf8")).toMatch(/serve Qwen\/Qwen2\.5-0\.5B-Instruct --host 127\.0\.0\.1 --port \d+ --served-model-name qwen-vllm --max-model-len 8192/);
    const res = await client.chat.completions.create({ model: "qwen-vllm", messages: [{ role: "user", content: "Hello again" }] });
    expect(res.choices[0]!.message.content).toBe("You said: Hello again");
  });

  it("stops the server's generation when the client goes away", async () => {
    const controller = new AbortController();
    const stream = await client.chat.completions.create({ model: "qwen-vllm", messages: [{ role: "user", content: "word ".repeat(200) }], stream: true }, { signal: controller.signal });
    for await (const _ of stream) {
      controller.abort();
      break;
    }
    await vi.waitFor(() => expect(readFileSync(log, "utf8")).toMatch(/canceled after \d+ words/), { timeout: 10_000, interval: 50 });
  });

  it("runs the GGUF model process without the agent's secrets in its environment", () => {
    const pid = gw.agent.host.list()[0]!.pid!;
    const environ = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
    expect(environ.filter((v) => /^(MAKINA_|HF_TOKEN=|HUGGING_FACE_HUB_TOKEN=)/.test(v))).toEqual([]);
    expect(environ.some((v) => v.startsWith("PATH="))).toBe(true);
    expect(process.env.MAKINA_AGENT_TOKEN).toBeDefined();
  });

  it("gives a server that downloads a gated repository itself the agent's Hugging Face token, and nothing else secret; the pin is the agent's", async () => {
    const { machineId } = await machine("nvidia-linux", "gated-box", { hfToken: "hf_GivenToTheAgent000000000000000", vllmPackage: "vllm==0.20.1" });
    writeFileSync(log, "");
    expect((await deploy(machineId, "vllm", "hf:meta-llama/Llama-3.2-1B-Instruct", "llama-gated")).state).toBe("deployed");
    const calls = readFileSync(log, "utf8");
    expect(calls).toContain("python -m pip install --upgrade vllm==0.20.1");
    expect(calls).toContain("env secrets=HF_TOKEN hf_token=hf_GivenToTheAgent000000000000000 hf_endpoint=https://huggingface.co");
  });

  it("refuses vLLM on a machine without a usable NVIDIA GPU, saying why", async () => {
    const { machineId } = await machine("cpu-vm", "cpu-box");
    await expect(deploy(machineId, "vllm", "hf:Qwen/Qwen2.5-0.5B-Instruct", "qwen-cpu")).rejects.toMatchObject({
      code: "incompatible_stack",
      message: "This stack cannot run on cpu-box: vLLM needs an NVIDIA GPU; none was detected on this machine.",
    });
    expect(await gw.relay.store.stacks.listByMachine(machineId)).toEqual([]);
  });

  it("still refuses on the machine a runtime its hardware cannot run, when the relay let it through", async () => {
    // A machine that reported no hardware yet passes the relay's rules; the agent checks again.
    const { machine: m, token } = await gw.relay.control.machines.create(OP, { org: gw.orgId, name: "unknown-box" });
    const stack = await gw.relay.control.stacks.create(OP, { org: gw.orgId, name: "vllm-unknown", machine: m.id, runtime: "vllm", model: "hf:Qwen/Qwen2.5-0.5B-Instruct", modelId: "qwen-unknown" });
    expect(stack.compatibility.ok).toBeNull();
    expect((await gw.relay.control.stacks.deploy(OP, stack.id)).state).toBe("deploying");
    const agent = await startAgent(
      resolveAgentConfig({ flags: { server: gw.relay.linkAddress, machineId: m.id, token, dataDir: join(gw.dataDir, "unknown-box"), threads: 1, gpu: false, python: join(STANDINS, "python3") }, env: process.env }),
      { log: silentLogger(), hardwareSource: fixtureSource("cpu-vm") },
    );
    agents.push(agent);
    await vi.waitFor(async () => expect((await gw.relay.control.stacks.get(OP, stack.id)).state).toBe("failed"), { timeout: 15_000, interval: 50 });
    expect((await gw.relay.control.stacks.get(OP, stack.id)).stateError).toBe("The vllm runtime cannot run here: needs Linux with an NVIDIA GPU (CUDA), but no cuda backend is usable here (no GPU found).");
    expect((await gw.relay.control.stacks.get(OP, stack.id)).compatibility.ok).toBe(false);
  });

  it("runs mlx_lm.server only on Apple silicon", async () => {
    const mac = await machine("apple-silicon", "mac");
    const ok = await deploy(mac.machineId, "mlx", "hf:mlx-community/Qwen2.5-0.5B-Instruct-4bit", "qwen-mlx");
    expect(ok.state).toBe("deployed");
    expect(readFileSync(log, "utf8")).toContain("python -m pip install --upgrade mlx-lm==0.28.2");
    expect((await client.chat.completions.create({ model: "qwen-mlx", messages: [{ role: "user", content: "Hi" }] })).choices[0]!.message.content).toBe("You said: Hi");
    // MLX's server has no embeddings: refused with the reason.
    await expect(client.embeddings.create({ model: "qwen-mlx", input: "Hi" })).rejects.toMatchObject({ status: 400, code: "unsupported_parameter", param: "model", error: { message: "The mlx runtime serving `qwen-mlx` has no embeddings." } });
    // Its server runs through the agent's launcher (mlx-lm has no key option), with a key of this start that it
    // wants of every request: another user of the machine calling its port gets 401.
    expect(readFileSync(log, "utf8")).toMatch(/mlx_lm\.server --model mlx-community\/Qwen2\.5-0\.5B-Instruct-4bit --host 127\.0\.0\.1 --port \d+\nenv secrets=none [^\n]*\napi_key=set/);
    const endpoint = mac.agent.host.list().find((r) => r.modelId === "qwen-mlx")!.endpoint;
    const direct = await fetch(`${endpoint}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "qwen-mlx", messages: [{ role: "user", content: "hi" }] }) });
    expect(direct.status).toBe(401);
    // MLX's server takes no response format: refused, never dropped.
    await expect(client.chat.completions.create({ model: "qwen-mlx", messages: [{ role: "user", content: "Hi" }], response_format: { type: "json_object" } })).rejects.toMatchObject({
      status: 400,
      code: "unsupported_parameter",
      param: "response_format",
    });
    // Nor tools.
    const tool = { type: "function" as const, function: { name: "f" } };
    await expect(client.chat.completions.create({ model: "qwen-mlx", messages: [{ role: "user", content: "Hi" }], tools: [tool] })).rejects.toMatchObject({ status: 400, code: "unsupported_parameter", param: "tools" });
    await expect(deploy(gw.machineId, "mlx", "hf:mlx-community/Qwen2.5-0.5B-Instruct-4bit", "qwen-mlx-linux")).rejects.toMatchObject({
      code: "incompatible_stack",
      message: expect.stringContaining("MLX needs macOS on Apple silicon"),
    });
  });

  /** Deploys an on-demand stack idle-unloaded after a second; the machine's states by model id come with it. */
  async function onDemand(machineId: string, runtime: "vllm" | "mlx", model: string, modelId: string) {
    const stack = await gw.relay.control.stacks.create(OP, { org: gw.orgId, name: modelId, machine: machineId, runtime, model, modelId, residency: "on_demand", idleUnloadS: 1 });
    await gw.relay.control.stacks.deploy(OP, stack.id);
    await gw.relay.deployer.settled(stack.id);
    return await gw.relay.control.stacks.get(OP, stack.id);
  }
  const servers = (pattern: RegExp) => readFileSync(log, "utf8").split("\n").filter((l) => pattern.test(l));

  it("puts an idle on-demand vLLM stack to sleep (level 1) and wakes it for the next request: one process all along (vLLM stood in for)", async () => {
    const { machineId, agent } = await machine("nvidia-linux", "gpu-sleeper");
    const stack = await onDemand(machineId, "vllm", "hf:Qwen/Qwen2.5-0.5B-Instruct", "qwen-sleepy");
    expect(stack).toMatchObject({ state: "deployed", runtimeState: "unloaded" });
    const started = () => servers(/--served-model-name qwen-sleepy/);
    expect(started()).toEqual([]);
    expect((await client.chat.completions.create({ model: "qwen-sleepy", messages: [{ role: "user", content: "Hi" }] })).choices[0]!.message.content).toBe("You said: Hi");
    // Started so it can sleep: with sleep mode, in the development mode that has its sleep routes.
    expect(started()).toEqual([expect.stringMatching(/ --enable-sleep-mode --scheduling-policy priority$/)]);
    const state = () => agent.host.list().find((h) => h.modelId === "qwen-sleepy")!;
    const pid = state().pid!;
    await vi.waitFor(() => expect(state().state).toBe("unloaded"), { timeout: 5000, interval: 50 });
    expect(servers(/^sleep /)).toEqual(["sleep level=1"]);
    expect(isAlive(pid)).toBe(true);
    expect((await client.chat.completions.create({ model: "qwen-sleepy", messages: [{ role: "user", content: "Again" }] })).choices[0]!.message.content).toBe("You said: Again");
    expect(servers(/^wake_up$/)).toHaveLength(1);
    expect(started()).toHaveLength(1);
    expect(state()).toMatchObject({ state: "ready", pid });
  });

  it("keeps a sleeping on-demand vLLM server that crashes stopped, never restarted awake while the budget counts it unloaded, and starts it for the next request (vLLM stood in for)", async () => {
    // The stand-in is killed as a crash of vLLM would end it: real vLLM cannot run here (no NVIDIA GPU).
    const lines: Record<string, unknown>[] = [];
    const log = createLogger({ level: "info", write: (line) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const { machineId, agent } = await machine("nvidia-linux", "gpu-crash-asleep", {}, log);
    await onDemand(machineId, "vllm", "hf:Qwen/Qwen2.5-0.5B-Instruct", "qwen-crash-asleep");
    const started = () => servers(/--served-model-name qwen-crash-asleep/);
    const wakes = () => servers(/^wake_up$/).length;
    expect((await client.chat.completions.create({ model: "qwen-crash-asleep", messages: [{ role: "user", content: "Hi" }] })).choices[0]!.message.content).toBe("You said: Hi");
    const state = () => agent.host.list().find((h) => h.modelId === "qwen-crash-asleep")!;
    const pid = state().pid!;
    await vi.waitFor(() => expect(state().state).toBe("unloaded"), { timeout: 5000, interval: 50 });
    expect(isAlive(pid)).toBe(true);
    const wakesBefore = wakes();
    // Asleep, its process group dies (the lifeline and the server under it).
    process.kill(-pid, "SIGKILL");
    // Its supervisor stops for good instead of starting another (`stopped` is final), and the stack stays unloaded.
    const processStates = () => lines.filter((l) => l.msg === "runtime process state" && l.runtime === "vllm qwen-crash-asleep").map((l) => l.state);
    await vi.waitFor(() => expect(processStates()).toEqual(["ready", "restarting", "stopped"]), { timeout: 10_000, interval: 50 });
    expect(lines.filter((l) => l.msg === "a sleeping model server ended: kept stopped, its next load starts it again")).toHaveLength(1);
    expect(started()).toHaveLength(1);
    expect(state()).toMatchObject({ state: "unloaded", pid: null });
    // The next request starts a new server (not a wake of the dead one) and is answered.
    expect((await client.chat.completions.create({ model: "qwen-crash-asleep", messages: [{ role: "user", content: "Again" }] })).choices[0]!.message.content).toBe("You said: Again");
    expect(started()).toEqual([expect.stringMatching(/ --enable-sleep-mode /), expect.stringMatching(/ --enable-sleep-mode /)]);
    expect(wakes()).toBe(wakesBefore);
    expect(state()).toMatchObject({ state: "ready", pid: expect.any(Number) });
    expect(state().pid).not.toBe(pid);
  });

  it("stops an idle on-demand MLX server and starts it again for the next request (MLX stood in for)", async () => {
    const mac = await machine("apple-silicon", "mac-on-demand");
    expect((await onDemand(mac.machineId, "mlx", "hf:mlx-community/SmolLM-135M-Instruct-4bit", "smol-mlx")).runtimeState).toBe("unloaded");
    const started = () => servers(/mlx_lm\.server --model mlx-community\/SmolLM-135M-Instruct-4bit/);
    expect(started()).toEqual([]);
    expect((await client.chat.completions.create({ model: "smol-mlx", messages: [{ role: "user", content: "Hi" }] })).choices[0]!.message.content).toBe("You said: Hi");
    const state = () => mac.agent.host.list().find((h) => h.modelId === "smol-mlx")!;
    const pid = state().pid!;
    expect(started()).toHaveLength(1);
    await vi.waitFor(() => expect(state().state).toBe("unloaded"), { timeout: 5000, interval: 50 });
    await vi.waitFor(() => expect(isAlive(pid)).toBe(false), { timeout: 5000, interval: 50 });
    expect((await client.chat.completions.create({ model: "smol-mlx", messages: [{ role: "user", content: "Again" }] })).choices[0]!.message.content).toBe("You said: Again");
    expect(started()).toHaveLength(2);
    expect(state().pid).not.toBe(pid);
  });

  it("serves through an OpenAI-compatible server that already runs on the machine", async () => {
    const port = await freePort();
    existing = spawn(process.execPath, [join(STANDINS, "openai-server.mjs"), "--host", "127.0.0.1", "--port", String(port), "--model", "llama3.2"], { stdio: "ignore" });
    await vi.waitFor(async () => expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200), { timeout: 5000, interval: 50 });
    const stack = await deploy(gw.machineId, "openai", `http://127.0.0.1:${port}/v1#llama3.2`, "local-llama");
    expect(stack.state).toBe("deployed");
    expect((await client.chat.completions.create({ model: "local-llama", messages: [{ role: "user", content: "Hey" }] })).choices[0]!.message.content).toBe("You said: Hey");
    // A non-streamed request is fetched from the server in one piece; a streamed one as a stream.
    expect(readFileSync(log, "utf8").trim().split("\n").at(-1)).toBe("request llama3.2 stream=false");
    let streamedText = "";
    for await (const chunk of await client.chat.completions.create({ model: "local-llama", messages: [{ role: "user", content: "Hey you" }], stream: true })) streamedText += chunk.choices[0]?.delta?.content ?? "";
    expect(streamedText).toBe("You said: Hey you");
    expect(readFileSync(log, "utf8").trim().split("\n").at(-1)).toBe("request llama3.2 stream=true");
    // A response format goes to the server as the client sent it: the server enforces it.
    const schema = { type: "object", properties: { a: { type: "string", pattern: "^x" } }, required: ["a"] };
    await client.chat.completions.create({ model: "local-llama", messages: [{ role: "user", content: "Hey" }], response_format: { type: "json_schema", json_schema: { name: "s", schema, strict: true } } });
    expect(readFileSync(log, "utf8").trim().split("\n").at(-1)).toBe(`request llama3.2 stream=false response_format=${JSON.stringify({ type: "json_schema", json_schema: { name: "s", schema, strict: true } })}`);
    // A schema the server refuses is the request's fault, said in one line of the server's words at most 300 long.
    const refused = await client.chat.completions
      .create({ model: "local-llama", messages: [{ role: "user", content: "Hey" }], response_format: { type: "json_schema", json_schema: { name: "s", schema: { ...schema, "x-standin-refuse": true } } } })
      .catch((e: unknown) => e as { status: number; code: string; error: { message: string } });
    expect(refused).toMatchObject({ status: 400, code: "invalid_value" });
    const said = (refused as { error: { message: string } }).error.message;
    expect(said).toMatch(/^The runtime refused the request: Invalid JSON schema for guided decoding: the grammar compiler/);
    expect(said.length).toBeLessThanOrEqual("The runtime refused the request: ".length + 300);
    expect(said).not.toContain("\n");
    // Tools go to the server as the client sent them, and its calls come back as they came: the server calls them.
    const weather = { type: "function" as const, function: { name: "get_weather", description: "The weather", parameters: { type: "object", properties: { city: { type: "string", pattern: "^[A-Z]" } } } } };
    const called = await client.chat.completions.create({ model: "local-llama", messages: [{ role: "user", content: "Paris" }], tools: [weather], tool_choice: { type: "function", function: { name: "get_weather" } }, parallel_tool_calls: false });
    expect(called.choices[0]).toMatchObject({ finish_reason: "tool_calls", message: { content: null, tool_calls: [{ id: "call_standin0", type: "function", function: { name: "get_weather", arguments: '{"said":"Paris"}' } }] } });
    expect(readFileSync(log, "utf8").trim().split("\n").at(-1)).toBe('request llama3.2 stream=false tools=get_weather tool_choice={"type":"function","function":{"name":"get_weather"}} parallel_tool_calls=false');
    const pieces: string[] = [];
    let streamedFinish: string | null = null;
    for await (const chunk of await client.chat.completions.create({ model: "local-llama", messages: [{ role: "user", content: "Oslo" }], tools: [weather], tool_choice: "required", stream: true })) {
      for (const d of chunk.choices[0]?.delta?.tool_calls ?? []) pieces.push(`${d.index}:${d.id ?? ""}:${d.function?.name ?? ""}:${d.function?.arguments ?? ""}`);
      streamedFinish = chunk.choices[0]?.finish_reason ?? streamedFinish;
    }
    expect([pieces, streamedFinish]).toEqual([["0:call_standin0:get_weather:", '0:::{"said"', '0::::"Oslo"}'], "tool_calls"]);
    const roundTrip = await client.chat.completions.create({
      model: "local-llama",
      messages: [{ role: "user", content: "Paris" }, called.choices[0]!.message, { role: "tool", tool_call_id: "call_standin0", content: "sunny" }],
      tools: [weather],
    });
    expect(roundTrip.choices[0]!.message.content).toBe("Tool said: sunny");
    // Image parts go to the server as sent: it reads them (a vision model), not the agent.
    const looked = await client.chat.completions.create({
      model: "local-llama",
      messages: [{ role: "user", content: [{ type: "text", text: "What is this?" }, { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }] }],
    });
    expect(looked.choices[0]!.message.content).toBe("You said: What is this? [image]");
    expect(readFileSync(log, "utf8").trim().split("\n").at(-1)).toBe("request llama3.2 stream=false images=data:image/png;base64,iVBORw0KGgo=");
    // A max_tokens no stack can take is refused alone: the machine's link and its other requests carry on.
    const held = client.chat.completions.create({ model: "stories", messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 200, stream: true });
    const huge = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "local-llama", messages: [{ role: "user", content: "Hey" }], max_tokens: 5_000_000_000 }),
    });
    expect(huge.status).toBe(400);
    expect(((await huge.json()) as { error: { code: string; param: string } }).error).toMatchObject({ code: "invalid_value", param: "max_tokens" });
    let streamed = 0;
    for await (const chunk of await held) streamed += chunk.choices[0]?.delta?.content ? 1 : 0;
    expect(streamed).toBeGreaterThan(0);
    const onLink = gw.relay.registry.get(gw.machineId)!;
    await expect(onLink.infer(stack.id, { messages: [{ role: "user", content: "x" }], temperature: 1, topP: 1, maxTokens: 2 ** 32, stop: [], presencePenalty: 0, frequencyPenalty: 0, stream: true }).next()).rejects.toMatchObject({
      code: "invalid_value",
      param: "max_tokens",
    });
    expect(gw.relay.registry.get(gw.machineId)).toBe(onLink);
    expect((await client.chat.completions.create({ model: "local-llama", messages: [{ role: "user", content: "Still there?" }] })).choices[0]!.message.content).toBe("You said: Still there?");
    const bad = await deploy(gw.machineId, "openai", `http://127.0.0.1:1/v1#nothing`, "nothing-there");
    expect(bad.state).toBe("failed");
    expect(bad.stateError).toContain("is not reachable");
  });

  it("restarts a crashing server, reports a crash loop to the relay, and answers 503 runtime_unavailable", async () => {
    // The agent's environment is read once, at start: its servers will crash 600 ms after they start.
    process.env.STANDIN_EXIT_AFTER_MS = "600";
    const { machineId, agent } = await machine("nvidia-linux", "flaky-box");
    try {
      const stack = await deploy(machineId, "vllm", "hf:org/flaky", "flaky");
      expect(stack.state).toBe("deployed");
      // Restarts are reported to the relay as they happen.
      await vi.waitFor(async () => expect((await gw.relay.store.stacks.get(stack.id))!.runtimeState).toBe("loading"), { timeout: 10_000, interval: 20 });
      await vi.waitFor(async () => expect((await gw.relay.store.stacks.get(stack.id))!.runtimeState).toBe("failed"), { timeout: 60_000, interval: 100 });
      const s = (await gw.relay.store.stacks.get(stack.id))!;
      expect(s.state).toBe("deployed");
      expect(s.runtimeError).toContain("crash loop");
      const after = await fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "flaky", messages: [{ role: "user", content: "hi" }] }),
      });
      expect(after.status).toBe(503);
      expect(((await after.json()) as { error: { code: string } }).error.code).toBe("runtime_unavailable");
      expect(agent.host.list()[0]).toMatchObject({ state: "failed", error: expect.stringContaining("crash loop") });
      const listed = await runCli(["admin", "stack", "list", "--org", gw.orgId, "--data-dir", gw.dataDir]);
      expect(listed.stdout).toMatch(/flaky\s+deployed, runtime failed \(crash loop/);
    } finally {
      delete process.env.STANDIN_EXIT_AFTER_MS;
    }
  }, 90_000);
});
