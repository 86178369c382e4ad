import { copyFileSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createLogger } from "../../proto/index.js";
import { operatorActor } from "../../relay/auth/index.js";
import type { Agent } from "../../agent/index.js";
import type { ChatInput, RuntimeEvent } from "../../agent/runtimes/model-runtime.js";
import { processHealth } from "../../agent/runtimes/gguf/process-health.js";
import { runCli } from "../helpers/cli.js";
import { testModelPath } from "../helpers/models.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";

const OP = operatorActor("test");

/**
 * Stacks loaded on demand (issue 42), on real GGUF models: a second machine that keeps at most two runtimes
 * loaded (`--max-loaded 2`), its stacks on demand unless said otherwise (a load given 30 s, ample on a busy CI machine). Requests go through the gateway as a
 * client's would; what is loaded is read from the machine's own list (`makina runtime list`).
 */
describe("stacks loaded on demand", () => {
  let gw: TestGateway;
  let machineId: string;
  let agent: Agent;
  const lines: Record<string, unknown>[] = [];
  const dir = mkdtempSync(join(tmpdir(), "makina-on-demand-"));
  /** A model file of its own for each stack (one can be taken away to make its load fail). */
  const modelFile = (name: string, source = "stories260K.gguf") => {
    const path = join(dir, `${name}.gguf`);
    copyFileSync(testModelPath(source), path);
    return path;
  };

  beforeAll(async () => {
    gw = await startTestGateway({ log: createLogger({ level: "info", write: (line) => void lines.push(JSON.parse(line) as Record<string, unknown>) }) });
    ({ machineId, agent } = await gw.addMachine(gw.orgId, { maxLoaded: 2, loadTimeoutMs: 30_000 }));
  });
  afterAll(async () => {
    await gw?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const stack = async (modelId: string, options: { residency?: "always" | "on_demand"; idleUnloadS?: number; model?: string } = {}) => {
    const made = await gw.relay.control.stacks.create(OP, {
      org: gw.orgId,
      name: modelId,
      machine: machineId,
      runtime: "gguf",
      model: options.model ?? modelFile(modelId),
      modelId,
      residency: options.residency ?? "on_demand",
      idleUnloadS: options.idleUnloadS ?? 0,
    });
    await gw.relay.control.stacks.deploy(OP, made.id);
    await gw.relay.deployer.settled(made.id);
    return made.id;
  };
  const chat = (model: string, init: { maxTokens?: number; stream?: boolean; signal?: AbortSignal } = {}) =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model, messages: [{ role: "user", content: "Once upon a time" }], max_tokens: init.maxTokens ?? 4, stream: init.stream ?? false }),
      signal: init.signal,
    });
  /** The newest entries of the request log. */
  const logged = async (n: number) =>
    ((await (await fetch(`${gw.relay.url}/admin/v1/requests?org=${gw.orgId}&per_page=${n}`, { headers: { authorization: `Bearer ${gw.relay.adminToken}` } })).json()) as { data: { stack_id: string; status: number; load_ms: number | null; prompt_tokens: number; completion_tokens: number }[] }).data;
  /** The relay's Prometheus series, as text. */
  const metrics = async () => (await fetch(`${gw.relay.url}/metrics`, { headers: { authorization: `Bearer ${gw.relay.adminToken}` } })).text();
  /** What the machine holds: each stack's runtime state, by model id. */
  const states = () => Object.fromEntries(agent.host.list().map((h) => [h.modelId, h.state]));
  const loadsOf = (stackId: string) => lines.filter((l) => l.msg === "model loaded on demand" && l.stackId === stackId).length;

  it("deploys a stack unloaded, lists it, and loads it on its first request", async () => {
    const id = await stack("tale-a");
    expect(states()["tale-a"]).toBe("unloaded");
    expect((await gw.relay.control.stacks.get(OP, id)).state).toBe("deployed");
    const models = (await (await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${gw.apiKey}` } })).json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toContain("tale-a");
    const res = await chat("tale-a");
    expect(res.status).toBe(200);
    expect(((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content.length).toBeGreaterThan(0);
    expect(states()["tale-a"]).toBe("ready");
    // The relay hears it too.
    await vi.waitFor(async () => expect((await gw.relay.control.stacks.get(OP, id)).runtimeState).toBe("ready"), { timeout: 3000, interval: 50 });
    // The request log says how long the first request waited for the load; the next one did not wait.
    expect((await chat("tale-a")).status).toBe(200);
    await vi.waitFor(async () => expect(await logged(2)).toHaveLength(2), { timeout: 3000, interval: 50 });
    const [second, first] = await logged(2);
    expect(first).toMatchObject({ stack_id: id, load_ms: expect.any(Number) });
    expect(first!.load_ms).toBeGreaterThan(0);
    expect(second).toMatchObject({ stack_id: id, load_ms: null });
    expect(await metrics()).toMatch(new RegExp(`makina_model_loads_total\\{[^}]*stack_id="${id}",outcome="loaded"[^}]*\\} 1\\n`));
    expect(await metrics()).toMatch(new RegExp(`makina_model_load_seconds_count\\{[^}]*stack_id="${id}"[^}]*\\} 1\\n`));
  });

  it("keeps at most two loaded: a third model unloads the least recently used, and twenty first requests share one load", async () => {
    const b = await stack("tale-b", { model: modelFile("tale-b", "stories260K-chat-template.gguf") });
    const c = await stack("tale-c", { model: modelFile("tale-c", "llama-2-tiny-random.gguf") });
    expect((await chat("tale-b")).status).toBe(200);
    expect(states()).toMatchObject({ "tale-a": "ready", "tale-b": "ready" });
    const loadsBefore = loadsOf(c);
    // Twenty at once to tale-c, unloaded: one load, every one answered; tale-a (used least lately) makes room.
    const answers = await Promise.all(Array.from({ length: 20 }, () => chat("tale-c").then((r) => r.status)));
    expect(answers).toEqual(new Array(20).fill(200));
    expect(loadsOf(c) - loadsBefore).toBe(1);
    expect(states()).toMatchObject({ "tale-a": "unloaded", "tale-b": "ready", "tale-c": "ready" });
    expect(b).toBeDefined();
    const a = agent.host.list().find((h) => h.modelId === "tale-a")!.stackId;
    expect(await metrics()).toMatch(new RegExp(`makina_model_unloads_total\\{[^}]*stack_id="${a}",reason="memory"[^}]*\\} 1\\n`));
  });

  it("never unloads an always stack, and unloads an idle one after its idle time", async () => {
    const fixed = await stack("tale-fixed", { residency: "always" });
    expect(states()["tale-fixed"]).toBe("ready");
    await stack("tale-idle", { idleUnloadS: 1 });
    // One place beside the always stack: the on-demand ones take turns in it.
    for (const model of ["tale-a", "tale-b", "tale-idle", "tale-c"]) expect((await chat(model)).status).toBe(200);
    expect(agent.host.list().filter((h) => h.state === "ready").map((h) => h.modelId).sort()).toEqual(["tale-c", "tale-fixed"]);
    // Used again, then left alone for its second: unloaded, and the relay says so.
    const idle = agent.host.list().find((h) => h.modelId === "tale-idle")!.stackId;
    expect((await chat("tale-idle")).status).toBe(200);
    expect(states()["tale-idle"]).toBe("ready");
    const pid = agent.host.list().find((h) => h.modelId === "tale-idle")!.pid;
    await vi.waitFor(() => expect(states()["tale-idle"]).toBe("unloaded"), { timeout: 5000, interval: 100 });
    await vi.waitFor(async () => expect((await gw.relay.control.stacks.get(OP, idle)).runtimeState).toBe("unloaded"), { timeout: 3000, interval: 50 });
    expect(await metrics()).toMatch(new RegExp(`makina_model_unloads_total\\{[^}]*stack_id="${idle}",reason="idle"[^}]*\\} 1\\n`));
    // A GGUF model unloads inside its process, which stays for its next load (a load costs node-llama-cpp's own, not a
    // process's start). Killed while its model sleeps, the process comes back asleep: nothing loaded uncounted.
    process.kill(pid!, "SIGKILL");
    const idleNow = () => agent.host.list().find((h) => h.modelId === "tale-idle")!;
    const restarted = await vi.waitFor(
      () => {
        const now = idleNow().pid;
        expect(now).toEqual(expect.any(Number));
        expect(now).not.toBe(pid);
        return now!;
      },
      { timeout: 15_000, interval: 100 },
    );
    await vi.waitFor(() => expect(readFileSync(`/proc/${restarted}/cmdline`, "utf8").split("\0")).toContain("--asleep"), { timeout: 5000, interval: 100 });
    expect(idleNow().state).toBe("unloaded");
    expect((await chat("tale-idle")).status).toBe(200);
    expect(idleNow()).toMatchObject({ state: "ready", pid: restarted });
    expect(lines.filter((l) => l.msg === "a sleeping runtime failed to wake: started again")).toEqual([]);
    expect(states()["tale-fixed"]).toBe("ready");
    expect(fixed).toBeDefined();
  });

  it("never unloads nor evicts a stack while it streams: not past its idle time, not for another's load, which waits for the stream's end", async () => {
    // One on-demand place beside the always stack (tale-fixed): the held stack takes it.
    const held = await stack("tale-held", { idleUnloadS: 1 });
    expect((await chat("tale-held")).status).toBe(200);
    expect(states()["tale-held"]).toBe("ready");
    // A long answer whose reader stops after its first piece: the model process pauses it, the request stays in flight.
    const input: ChatInput = { messages: [{ role: "user", content: "Tell me a long story" }], temperature: 0, topP: 1, maxTokens: 400, stop: [], presencePenalty: 0, frequencyPenalty: 0, stream: true };
    const stream = agent.host.runtime(held)!.chat(input)[Symbol.asyncIterator]();
    expect((await stream.next()).value).toMatchObject({ type: "text" });
    // Another model asks for the place meanwhile.
    let answered = false;
    const other = chat("tale-a").finally(() => (answered = true));
    // Past the held stack's idle time (1 s) twice over: still loaded, and the other still waits for its place.
    await new Promise((r) => setTimeout(r, 2500));
    expect(states()["tale-held"]).toBe("ready");
    expect(states()["tale-a"]).not.toBe("ready");
    expect(answered).toBe(false);
    // The stream read to its end: the waiting load takes the place, the held stack (idle now) leaves it.
    const events: RuntimeEvent[] = [];
    for (let ev = await stream.next(); !ev.done; ev = await stream.next()) events.push(ev.value);
    expect(events.at(-1)).toMatchObject({ type: "end" });
    expect((await other).status).toBe(200);
    expect(states()).toMatchObject({ "tale-held": "unloaded", "tale-a": "ready", "tale-fixed": "ready" });
  });

  it("holds requests through a restart without room for two runtimes: they wait for the new one, none gets 404", async () => {
    // Two always stacks fill the machine's two places: a redeploy cannot start the new runtime beside the old one.
    const fixed = agent.host.list().find((h) => h.modelId === "tale-fixed")!.stackId;
    await stack("tale-fixed-2", { residency: "always" });
    const seen: { status: number; restarting: boolean }[] = [];
    let going = true;
    const loop = async () => {
      while (going) {
        const restarting = (await gw.relay.control.stacks.get(OP, fixed)).state === "deploying";
        const res = await chat("tale-fixed");
        await res.arrayBuffer();
        seen.push({ status: res.status, restarting });
      }
    };
    const loops = [loop(), loop()];
    await gw.relay.control.stacks.update(OP, fixed, { maxContext: 256 });
    await gw.relay.deployer.settled(fixed);
    going = false;
    await Promise.all(loops);
    expect(agent.host.list().find((h) => h.stackId === fixed)).toMatchObject({ state: "ready", contextSize: 256 });
    expect(seen.filter((s) => s.restarting).length).toBeGreaterThan(0);
    expect(seen.filter((s) => s.status !== 200)).toEqual([]);
    await gw.relay.control.stacks.undeploy(OP, agent.host.list().find((h) => h.modelId === "tale-fixed-2")!.stackId);
  });

  it("answers every waiter 503 with the reason when the load fails, and loads on the next request once it can", async () => {
    const path = modelFile("tale-gone");
    await stack("tale-gone", { model: path });
    renameSync(path, `${path}.away`);
    const failed = await Promise.all([chat("tale-gone"), chat("tale-gone")]);
    for (const res of failed) {
      expect(res.status).toBe(503);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error).toMatchObject({ code: "runtime_unavailable" });
      expect(body.error.message).toMatch(/could not be loaded/);
    }
    expect(states()["tale-gone"]).toBe("unloaded");
    renameSync(`${path}.away`, path);
    expect((await chat("tale-gone")).status).toBe(200);
  });

  it("goes on loading when the only client waiting leaves", async () => {
    const id = await stack("tale-left");
    const loadsBefore = loadsOf(id);
    const leaving = new AbortController();
    const asked = chat("tale-left", { signal: leaving.signal }).catch((e: unknown) => e);
    // The load has begun (or, on a fast machine, is done already) when the client leaves.
    await vi.waitFor(() => expect(["loading", "ready"]).toContain(states()["tale-left"]), { timeout: 3000, interval: 2 });
    const leftWhile = states()["tale-left"];
    leaving.abort();
    await asked;
    await vi.waitFor(() => expect(states()["tale-left"]).toBe("ready"), { timeout: 5000, interval: 20 });
    expect((await chat("tale-left")).status).toBe(200);
    expect(loadsOf(id) - loadsBefore).toBe(1);
    // The client that left is logged as gone (499); left while the model loaded, it is charged nothing.
    await vi.waitFor(async () => expect((await logged(2)).filter((r) => r.stack_id === id)).toHaveLength(2), { timeout: 3000, interval: 50 });
    // (On a machine quick enough to have loaded it before the client left, the request may have been served.)
    if (leftWhile === "loading") {
      const left = (await logged(2)).find((r) => r.stack_id === id && r.status === 499);
      expect(left).toMatchObject({ prompt_tokens: 0, completion_tokens: 0 });
    }
  });

  it("sends a stream's headers once its model has loaded, with the openai client, and logs how long it waited", async () => {
    const id = await stack("tale-stream");
    expect(states()["tale-stream"]).toBe("unloaded");
    // The events stream (what the web application reloads by), opened once the stack is deployed.
    const events = new AbortController();
    const eventStream = await fetch(`${gw.relay.url}/admin/v1/events?org=${gw.orgId}`, { headers: { authorization: `Bearer ${gw.relay.adminToken}` }, signal: events.signal });
    const reader = eventStream.body!.getReader();
    let heard = "";
    const told = (async () => {
      const decoder = new TextDecoder();
      while (!heard.includes(`"stack_id":"${id}"`)) {
        const { done, value } = await reader.read();
        if (done) throw new Error(`the events stream ended before it named the stack: ${heard}`);
        heard += decoder.decode(value, { stream: true });
      }
    })();
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
    // The call resolves with the response's headers: by then the model is loaded, not loading.
    const stream = await client.chat.completions.create({ model: "tale-stream", messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 8, stream: true });
    expect(states()["tale-stream"]).toBe("ready");
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    expect(text.length).toBeGreaterThan(0);
    await vi.waitFor(async () => expect((await logged(1))[0]).toMatchObject({ stack_id: id, load_ms: expect.any(Number) }), { timeout: 3000, interval: 50 });
    // The load's runtime states were told on the events stream: the stack named, to be read again (ready now).
    await told;
    expect(heard).toMatch(new RegExp(`event: stack\ndata: \{[^}]*"stack_id":"${id}"`));
    events.abort();
    expect((await gw.relay.control.stacks.get(OP, id)).runtimeState).toBe("ready");
  });

  it("loads and unloads an on-demand stack's model when an admin asks, from the API and the command line; an always stack is refused", async () => {
    const admin = (path: string) => fetch(`${gw.relay.url}/admin/v1${path}`, { method: "POST", headers: { authorization: `Bearer ${gw.relay.adminToken}` } });
    const id = await stack("tale-warm");
    expect(states()["tale-warm"]).toBe("unloaded");
    const loaded = await admin(`/stacks/${id}/load`);
    expect([loaded.status, ((await loaded.json()) as { runtime_state: string }).runtime_state]).toEqual([200, "ready"]);
    // Loaded without a request: the machine holds it now.
    expect(states()["tale-warm"]).toBe("ready");
    const unloaded = await runCli(["admin", "stack", "unload", id, "--data-dir", gw.dataDir]);
    expect(unloaded.stdout).toContain("Unloaded: tale-warm's memory");
    expect(states()["tale-warm"]).toBe("unloaded");
    expect(await metrics()).toMatch(new RegExp(`makina_model_unloads_total\\{[^}]*stack_id="${id}",reason="asked"[^}]*\\} 1\\n`));
    expect((await runCli(["admin", "stack", "load", id, "--data-dir", gw.dataDir])).stdout).toContain("Loaded: tale-warm is ready");
    expect(states()["tale-warm"]).toBe("ready");
    const fixed = agent.host.list().find((h) => h.modelId === "tale-fixed")!.stackId;
    const refused = await admin(`/stacks/${fixed}/load`);
    expect([refused.status, ((await refused.json()) as { error: { code: string; message: string } }).error]).toEqual([409, expect.objectContaining({ code: "conflict", message: expect.stringContaining("always loaded while deployed") })]);
    const audit = (await (await fetch(`${gw.relay.url}/admin/v1/audit?org=${gw.orgId}&action=stack`, { headers: { authorization: `Bearer ${gw.relay.adminToken}` } })).json()) as { data: { action: string }[] };
    expect(audit.data.map((e) => e.action).slice(0, 3)).toEqual(["stack.loaded", "stack.unloaded", "stack.loaded"]);
  });

  it("keeps within a memory budget in bytes: loads unload the least recently used, always stacks take room and are refused once none is left", async () => {
    // Each test model counts under 300 MiB (its weights, its KV cache at 512 tokens, and the 256 MiB every runtime is given): two fit in 600 MiB.
    const small = await gw.addMachine(gw.orgId, { memoryBudget: "600MiB", loadTimeoutMs: 30_000 });
    const on = async (modelId: string, residency: "always" | "on_demand" = "on_demand") => {
      const made = await gw.relay.control.stacks.create(OP, { org: gw.orgId, name: modelId, machine: small.machineId, runtime: "gguf", model: modelFile(modelId), modelId, residency, idleUnloadS: 0 });
      await gw.relay.control.stacks.deploy(OP, made.id);
      await gw.relay.deployer.settled(made.id);
      return gw.relay.control.stacks.get(OP, made.id);
    };
    const held = () => Object.fromEntries(small.agent.host.list().map((h) => [h.modelId, h.state]));
    for (const id of ["byte-a", "byte-b", "byte-c"]) expect((await on(id)).state).toBe("deployed");
    for (const id of ["byte-a", "byte-b"]) expect((await chat(id)).status).toBe(200);
    expect(held()).toMatchObject({ "byte-a": "ready", "byte-b": "ready" });
    expect((await chat("byte-c")).status).toBe(200);
    expect(held()).toMatchObject({ "byte-a": "unloaded", "byte-b": "ready", "byte-c": "ready" });
    // An always stack makes room by unloading idle on-demand ones; a second fills the budget; a third finds none.
    expect((await on("byte-fixed-1", "always")).state).toBe("deployed");
    expect((await on("byte-fixed-2", "always")).state).toBe("deployed");
    expect(held()).toMatchObject({ "byte-b": "unloaded", "byte-c": "unloaded", "byte-fixed-1": "ready", "byte-fixed-2": "ready" });
    const failed = await on("byte-fixed-3", "always");
    expect(failed.state).toBe("failed");
    const [, need, used, first, second] = /^byte-fixed-3 needs about (\d+) MiB, and this machine's loaded runtimes use (\d+) MiB of its 600 MiB budget \(--memory-budget\), and none can be unloaded now: byte-fixed-1 \((\d+) MiB\), byte-fixed-2 \((\d+) MiB\)/.exec(failed.stateError ?? "") ?? [];
    expect(Math.abs(Number(used) - Number(first) - Number(second))).toBeLessThanOrEqual(1);
    expect(Number(need)).toBeGreaterThan(600 - Number(used));
    // A loaded GGUF model counts what its process says it holds (node-llama-cpp's model and context, and the runtime's own).
    const fixed1 = small.agent.host.list().find((h) => h.modelId === "byte-fixed-1")!;
    const said = await processHealth(fixed1.endpoint.replace(/^unix:/, ""));
    expect(said.memoryBytes).toBeGreaterThan(256 * 1024 ** 2);
    expect(fixed1.memoryBytes).toBe(said.memoryBytes);
    expect(Math.round(said.memoryBytes / 1024 ** 2)).toBe(Number(first));
  });

  it("says each machine's memory budget everywhere, judges an on-demand stack by it, and loads a replica where most of it is free", async () => {
    const roomy = await gw.addMachine(gw.orgId, { memoryBudget: "2GiB", loadTimeoutMs: 30_000 });
    const tight = await gw.addMachine(gw.orgId, { memoryBudget: "700MiB", loadTimeoutMs: 30_000 });
    const admin = { authorization: `Bearer ${gw.relay.adminToken}` };
    const on = async (machine: string, name: string, modelId: string, residency: "always" | "on_demand") => {
      const made = await gw.relay.control.stacks.create(OP, { org: gw.orgId, name, machine, runtime: "gguf", model: modelFile(name), modelId, residency, idleUnloadS: 0 });
      await gw.relay.control.stacks.deploy(OP, made.id);
      await gw.relay.deployer.settled(made.id);
      return made.id;
    };
    // The tight machine holds an always stack, leaving less of its budget free than the roomy one has.
    await on(tight.machineId, "tight-fixed", "tight-fixed", "always");
    const onTight = await on(tight.machineId, "shared-tight", "shared-tale", "on_demand");
    const onRoomy = await on(roomy.machineId, "shared-roomy", "shared-tale", "on_demand");
    type Inventory = { runtimes: { stack_id: string; residency: string; memory_bytes: number; loaded: boolean }[]; memory: { budget_bytes: number; used_bytes: number } | null };
    const inventoryOf = async (id: string) => ((await (await fetch(`${gw.relay.url}/admin/v1/machines/${id}`, { headers: admin })).json()) as { inventory: Inventory | null }).inventory;
    const tightInventory = await vi.waitFor(
      async () => {
        const inventory = await inventoryOf(tight.machineId);
        expect(inventory?.memory?.used_bytes).toBeGreaterThan(0);
        expect(inventory?.runtimes.map((r) => r.stack_id)).toContain(onTight);
        return inventory!;
      },
      { timeout: 5000, interval: 100 },
    );
    expect(tightInventory.memory!.budget_bytes).toBe(700 * 1024 ** 2);
    expect(tightInventory.runtimes.find((r) => r.stack_id === onTight)).toMatchObject({ residency: "on_demand", loaded: false });
    expect(tightInventory.runtimes.find((r) => r.stack_id === onTight)!.memory_bytes).toBeGreaterThan(0);

    // The compatibility of the on-demand replica: the budget beside what stays loaded, and what it shares the machine with.
    const view = await gw.relay.control.stacks.get(OP, onTight);
    expect(view.compatibility.checks.map((c) => c.message)).toContainEqual(expect.stringMatching(/^Loaded on demand, it fits this machine's memory budget \(700 MiB, its agent's --memory-budget\) beside the \d+ MiB its always-loaded stacks hold \(tight-fixed \(\d+ MiB\)\)\.$/));

    // Neither replica is loaded: the one whose machine has the most free loads the model.
    expect((await chat("shared-tale")).status).toBe(200);
    const held = (a: Agent, id: string) => a.host.list().find((h) => h.stackId === id)!.state;
    expect(held(roomy.agent, onRoomy)).toBe("ready");
    expect(held(tight.agent, onTight)).toBe("unloaded");

    // Each replica's share of the last hour's requests, on each one's view.
    const shares = await gw.relay.control.stacks.get(OP, onTight);
    expect(shares.requestsLastHour).toBe(0);
    expect(shares.replicas).toEqual([expect.objectContaining({ id: onRoomy, requestsLastHour: 1 })]);

    // The Overview: each machine's memory against its budget, stack by stack.
    await vi.waitFor(
      async () => {
        const overview = (await (await fetch(`${gw.relay.url}/admin/v1/overview?org=${gw.orgId}`, { headers: admin })).json()) as { loads: { machine_id: string; models: { budget_bytes: number; stacks: { stack_id: string; name: string; loaded: boolean }[] } | null }[] };
        const models = overview.loads.find((l) => l.machine_id === roomy.machineId)?.models;
        expect(models?.budget_bytes).toBe(2 * 1024 ** 3);
        expect(models?.stacks).toEqual([expect.objectContaining({ stack_id: onRoomy, name: "shared-roomy", loaded: true })]);
      },
      { timeout: 5000, interval: 100 },
    );

    // /health's detail is the operator's: the machines linked here and their models; anyone else gets the status.
    const health = (await (await fetch(`${gw.relay.url}/health`, { headers: admin })).json()) as { status: string; linked?: { machines: number; loaded: number; unloaded: number } };
    expect(health.linked!.machines).toBeGreaterThanOrEqual(3);
    expect(health.linked!.loaded).toBeGreaterThanOrEqual(2);
    expect(health.linked!.unloaded).toBeGreaterThanOrEqual(1);
    expect(await (await fetch(`${gw.relay.url}/health`)).json()).toEqual({ status: "ok" });
    expect(await (await fetch(`${gw.relay.url}/health`, { headers: { authorization: `Bearer ${gw.apiKey}` } })).json()).toEqual({ status: "ok" });
  });

  it("says an on-demand stack's context once a request has loaded its model: the number its runtime reports", async () => {
    const made = await gw.relay.control.stacks.create(OP, { org: gw.orgId, name: "tale-sized", machine: machineId, runtime: "gguf", model: modelFile("tale-sized"), modelId: "tale-sized", residency: "on_demand", idleUnloadS: 0, maxContext: 256 });
    await gw.relay.control.stacks.deploy(OP, made.id);
    await gw.relay.deployer.settled(made.id);
    const contextSize = async () => ((await (await fetch(`${gw.relay.url}/admin/v1/stacks/${made.id}`, { headers: { authorization: `Bearer ${gw.relay.adminToken}` } })).json()) as { context_size: number | null }).context_size;
    // Deployed unloaded: nothing has said its context yet.
    expect(states()["tale-sized"]).toBe("unloaded");
    expect(await contextSize()).toBeNull();
    expect((await chat("tale-sized")).status).toBe(200);
    const reported = agent.host.runtime(made.id)!.contextSize;
    // What it asked, not the machine's default (512 here).
    expect(reported).toBe(256);
    await vi.waitFor(async () => expect(await contextSize()).toBe(reported), { timeout: 3000, interval: 50 });
    // The gateway knows it too: more tokens than it holds are refused before they reach the machine, as for an always stack.
    const tooLong = async () => {
      const res = await chat("tale-sized", { maxTokens: 1000 });
      return [res.status, ((await res.json()) as { error?: { code: string } }).error?.code];
    };
    await vi.waitFor(async () => expect(await tooLong()).toEqual([400, "context_length_exceeded"]), { timeout: 3000, interval: 50 });
    // Unloaded again, it keeps the context its runtime loads with.
    expect((await fetch(`${gw.relay.url}/admin/v1/stacks/${made.id}/unload`, { method: "POST", headers: { authorization: `Bearer ${gw.relay.adminToken}` } })).status).toBe(200);
    expect(await contextSize()).toBe(reported);
  });
});
