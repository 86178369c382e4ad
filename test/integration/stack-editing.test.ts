import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditEvent, Compatibility, Stack, StackChange } from "../../relay/admin-contract/index.js";
import { runCli } from "../helpers/cli.js";
import { testModelPath } from "../helpers/models.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { WebClient } from "../helpers/web-client.js";

// Stacks change after they are made, and are deleted (issue 21, point 3): what changes without a rebuild changes at
// once; what the machine builds on is redeployed; nothing that serves is deleted without being undeployed first.
describe("editing and deleting stacks", () => {
  let gw: TestGateway;
  const operator = (method: string, path: string, body?: unknown) =>
    fetch(`${gw.relay.url}${path}`, { method, headers: { authorization: `Bearer ${gw.relay.adminToken}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  const patch = async (id: string, body: unknown) => {
    const res = await operator("PATCH", `/admin/v1/stacks/${id}`, body);
    return { status: res.status, body: (await res.json()) as StackChange & { error: { code: string; param: string | null; message: string } } };
  };
  const stack = async (id: string) => (await (await operator("GET", `/admin/v1/stacks/${id}`)).json()) as Stack;
  const chat = (model: string, extra: Record<string, unknown> = { max_tokens: 1 }) =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model, messages: [{ role: "user", content: "Once upon a time" }], ...extra }),
    });
  const models = async () => ((await (await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${gw.apiKey}` } })).json()) as { data: { id: string }[] }).data.map((m) => m.id);
  const audit = async (action: string) => ((await (await operator("GET", `/admin/v1/audit?org=${gw.orgId}&action=${action}`)).json()) as { data: AuditEvent[] }).data;

  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("renames a deployed stack and turns its endpoint off and on at once, serving all along", async () => {
    const renamed = await patch(gw.stackId, { name: "story teller" });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ id: gw.stackId, name: "story teller", state: "deployed", changed: ["name"], redeployed: false });
    expect((await chat(gw.modelId)).status).toBe(200);

    const hidden = await patch(gw.stackId, { endpoint: false });
    expect(hidden.body).toMatchObject({ has_endpoint: false, state: "deployed", changed: ["endpoint"], redeployed: false });
    expect(await models()).not.toContain(gw.modelId);
    expect((await chat(gw.modelId)).status).toBe(404);
    expect((await patch(gw.stackId, { endpoint: true })).body).toMatchObject({ has_endpoint: true, state: "deployed" });
    expect((await chat(gw.modelId)).status).toBe(200);

    // A bad value changes nothing; the same value again changes nothing and records nothing.
    for (const body of [{ name: "" }, { name: "x".repeat(101) }, { endpoint: "no" }, { runtime: "tensorrt" }, { model_id: "has space" }]) {
      const refused = await patch(gw.stackId, body);
      expect([refused.status, refused.body.error.param]).toEqual([400, Object.keys(body)[0]]);
    }
    expect((await patch(gw.stackId, { name: "story teller", endpoint: true })).body.changed).toEqual([]);
    expect((await audit("stack.changed")).map((e) => e.detail)).toEqual([
      { endpoint_was: false, endpoint: true },
      { endpoint_was: true, endpoint: false },
      { name_was: "test-stack", name: "story teller" },
    ]);
  });

  it("redeploys a deployed stack with new layers, and the next requests get them", async () => {
    const changed = await patch(gw.stackId, { harness: "system-prompt", harness_options: { prompt: "Tell a story.", max_tokens: 2 } });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ state: "deploying", changed: ["harness", "harness_options"], redeployed: true });
    await gw.relay.deployer.settled(gw.stackId);
    expect(await stack(gw.stackId)).toMatchObject({ state: "deployed", harness: "system-prompt", harness_options: { prompt: "Tell a story.", max_tokens: 2 } });
    // The harness's max_tokens holds for a request that sets none.
    const res = await chat(gw.modelId, {});
    const body = (await res.json()) as { usage: { completion_tokens: number }; choices: { finish_reason: string }[] };
    expect([res.status, body.usage.completion_tokens, body.choices[0]!.finish_reason]).toEqual([200, 2, "length"]);
    // Recorded with the option names only, never their texts.
    expect((await audit("stack.changed"))[0]!.detail).toEqual({ harness_was: null, harness: "system-prompt", harness_options_was: null, harness_options: "prompt, max_tokens", redeployed: true });

    // The same options in another order are no change: no redeploy for nothing.
    expect((await patch(gw.stackId, { name: "story teller", harness_options: { max_tokens: 2, prompt: "Tell a story." } })).body).toMatchObject({ changed: [], redeployed: false, state: "deployed" });
    // Options given alone are checked against the harness the stack has.
    const bad = await patch(gw.stackId, { harness_options: { prompt: "x", temperature: 9 } });
    expect([bad.status, bad.body.error.param]).toEqual([400, "harness_options.temperature"]);
    expect((await patch(gw.stackId, { harness: null })).body).toMatchObject({ harness: null, harness_options: {}, redeployed: true });
    await gw.relay.deployer.settled(gw.stackId);
  });

  it("serves a deployed stack under its new model id once redeployed", async () => {
    const changed = await patch(gw.stackId, { model_id: "tales" });
    expect(changed.body).toMatchObject({ model_id: "tales", redeployed: true });
    await gw.relay.deployer.settled(gw.stackId);
    expect(await models()).toContain("tales");
    expect((await chat("tales")).status).toBe(200);
    expect((await chat(gw.modelId)).status).toBe(404);
    await patch(gw.stackId, { model_id: gw.modelId });
    await gw.relay.deployer.settled(gw.stackId);
    expect((await chat(gw.modelId)).status).toBe(200);
  });

  it("serves the context a stack asks for (never past what the model was trained for), and a new one restarts its runtime", async () => {
    // About 800 tokens of prompt: more than this machine's default context (512), less than 1,024.
    const long = { max_tokens: 1, messages: [{ role: "user", content: "Once upon a time there was a dog. ".repeat(100) }] };
    const before = await chat(gw.modelId, long);
    expect([before.status, ((await before.json()) as { error: { code: string } }).error.code]).toEqual([400, "context_length_exceeded"]);
    const pid = () => gw.agent.host.list().find((s) => s.stackId === gw.stackId)?.pid;
    const firstPid = pid();

    const asked = await patch(gw.stackId, { max_context: 1024 });
    expect(asked.body).toMatchObject({ max_context: 1024, changed: ["max_context"], redeployed: true });
    await gw.relay.deployer.settled(gw.stackId);
    expect(await stack(gw.stackId)).toMatchObject({ state: "deployed", max_context: 1024, context_size: 1024 });
    expect(pid()).not.toBe(firstPid);
    expect((await chat(gw.modelId, long)).status).toBe(200);
    expect((await audit("stack.changed"))[0]!.detail).toEqual({ max_context_was: null, max_context: 1024, redeployed: true });

    // More than the model was trained for (2,048): the runtime serves what the model takes.
    await patch(gw.stackId, { max_context: 8192 });
    await gw.relay.deployer.settled(gw.stackId);
    expect(await stack(gw.stackId)).toMatchObject({ max_context: 8192, context_size: 2048 });

    // Back to the machine's default.
    expect((await patch(gw.stackId, { max_context: null })).body).toMatchObject({ max_context: null, redeployed: true });
    await gw.relay.deployer.settled(gw.stackId);
    expect(await stack(gw.stackId)).toMatchObject({ max_context: null, context_size: 512 });

    // Out of range, not a number, or for a runtime that sizes its own: refused, saying why, at the field.
    for (const [body, words] of [
      [{ max_context: 64 }, "from 128 to 1,048,576"],
      [{ max_context: 2_000_000 }, "from 128 to 1,048,576"],
      [{ max_context: "lots" }, "whole number of tokens"],
      [{ runtime: "openai", model: "llama3.1:8b", max_context: 4096 }, "sizes its own context"],
    ] as const) {
      const refused = await patch(gw.stackId, body);
      expect([refused.status, refused.body.error.param, refused.body.error.message]).toEqual([400, "max_context", expect.stringContaining(words)]);
    }
    const created = await operator("POST", "/admin/v1/stacks", { org: gw.orgId, name: "mlx-context", machine: gw.machineId, runtime: "mlx", model: "mlx-community/x", max_context: 4096 });
    expect([created.status, ((await created.json()) as { error: { param: string } }).error.param]).toEqual([400, "max_context"]);
    // The Forge's panel counts the memory of the context asked.
    const panel = (await (await operator("POST", "/admin/v1/compatibility", { org: gw.orgId, machine: gw.machineId, runtime: "gguf", model: "hf:bartowski/Meta-Llama-3.1-8B-Instruct-GGUF/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", max_context: 16384 })).json()) as Compatibility;
    expect(panel.checks.find((c) => c.topic === "memory")?.message).toContain("2 × 16,384 tokens");
  });

  it("keeps serving through a redeploy that restarts the runtime: the old one serves until the new one is ready, no request gets 404", async () => {
    const pid = () => gw.agent.host.list().find((s) => s.stackId === gw.stackId)?.pid;
    const firstPid = pid();
    const seen: { status: number; deploying: boolean }[] = [];
    let going = true;
    const loop = async () => {
      while (going) {
        const deploying = (await stack(gw.stackId)).state === "deploying";
        const res = await chat(gw.modelId);
        await res.arrayBuffer();
        seen.push({ status: res.status, deploying });
      }
    };
    const loops = [loop(), loop()];
    expect((await patch(gw.stackId, { max_context: 768 })).body).toMatchObject({ redeployed: true });
    await gw.relay.deployer.settled(gw.stackId);
    going = false;
    await Promise.all(loops);
    expect(pid()).not.toBe(firstPid);
    expect(await stack(gw.stackId)).toMatchObject({ state: "deployed", context_size: 768 });
    expect(seen.filter((s) => s.deploying).length).toBeGreaterThan(0);
    expect(seen.filter((s) => s.status !== 200)).toEqual([]);
    await patch(gw.stackId, { max_context: null });
    await gw.relay.deployer.settled(gw.stackId);
  });

  it("makes a stack on demand with its idle time, lists it so, and takes it back to always; a wrong value, or an existing server on demand, is refused at the field", async () => {
    const made = await operator("POST", "/admin/v1/stacks", { org: gw.orgId, name: "sleeper", machine: gw.machineId, runtime: "gguf", model: testModelPath(), model_id: "sleeper", residency: "on_demand", idle_unload_s: 120 });
    const sleeper = (await made.json()) as Stack;
    expect([made.status, sleeper.residency, sleeper.idle_unload_s]).toEqual([201, "on_demand", 120]);
    const listed = ((await (await operator("GET", `/admin/v1/stacks?org=${gw.orgId}&q=sleeper`)).json()) as { data: Stack[] }).data;
    expect(listed.map((s) => [s.id, s.residency, s.idle_unload_s])).toEqual([[sleeper.id, "on_demand", 120]]);
    // A stack made without them is always loaded, and keeps the default idle time.
    expect(await stack(gw.stackId)).toMatchObject({ residency: "always", idle_unload_s: 600 });

    // An existing server is never started or stopped by Makina: made so, or made so by an edit.
    const server = await operator("POST", "/admin/v1/stacks", { org: gw.orgId, name: "server", machine: gw.machineId, runtime: "openai", model: "http://fake.invalid/v1#fake", residency: "on_demand" });
    const serverError = ((await server.json()) as { error: { code: string; param: string; message: string } }).error;
    expect([server.status, serverError.code, serverError.param, serverError.message]).toEqual([400, "invalid_value", "residency", expect.stringContaining("always on")]);
    const toServer = await patch(sleeper.id, { runtime: "openai", model: "http://fake.invalid/v1#fake" });
    expect([toServer.status, toServer.body.error.param]).toEqual([400, "residency"]);

    for (const body of [{ residency: "sometimes" }, { idle_unload_s: -1 }]) {
      const created = await operator("POST", "/admin/v1/stacks", { org: gw.orgId, name: "bad", machine: gw.machineId, runtime: "gguf", model: testModelPath(), ...body });
      const edited = await patch(sleeper.id, body);
      const field = Object.keys(body)[0];
      expect([created.status, ((await created.json()) as { error: { param: string } }).error.param]).toEqual([400, field]);
      expect([edited.status, edited.body.error.code, edited.body.error.param]).toEqual([400, "invalid_value", field]);
    }
    expect((await patch(sleeper.id, { residency: "always" })).body).toMatchObject({ residency: "always", idle_unload_s: 120, changed: ["residency"], redeployed: false });
  });

  it("redeploys a deployed stack with a new residency without restarting its runtime, and records the change", async () => {
    const pid = () => gw.agent.host.list().find((s) => s.stackId === gw.stackId)?.pid;
    const running = pid();
    expect(running).toEqual(expect.any(Number));
    const onDemand = await patch(gw.stackId, { residency: "on_demand", idle_unload_s: 120 });
    expect(onDemand.body).toMatchObject({ residency: "on_demand", idle_unload_s: 120, changed: ["residency", "idle_unload_s"], redeployed: true });
    await gw.relay.deployer.settled(gw.stackId);
    expect(await stack(gw.stackId)).toMatchObject({ state: "deployed", residency: "on_demand", idle_unload_s: 120 });
    expect(pid()).toBe(running);
    expect((await chat(gw.modelId)).status).toBe(200);
    expect((await audit("stack.changed"))[0]!.detail).toEqual({ residency_was: "always", residency: "on_demand", idle_unload_s_was: 600, idle_unload_s: 120, redeployed: true });

    expect((await patch(gw.stackId, { residency: "always", idle_unload_s: 600 })).body).toMatchObject({ changed: ["residency", "idle_unload_s"], redeployed: true });
    await gw.relay.deployer.settled(gw.stackId);
    expect(await stack(gw.stackId)).toMatchObject({ state: "deployed", residency: "always" });
    expect(pid()).toBe(running);
  });

  it("sets a stack on demand from the command line, shown by the stack and the list, and back to always", async () => {
    const cli = (...args: string[]) => runCli(["admin", "stack", ...args, "--data-dir", gw.dataDir]);
    const made = await cli("create", "--org", gw.orgId, "--name", "napper", "--machine", gw.machineId, "--runtime", "gguf", "--model", testModelPath(), "--model-id", "napper", "--residency", "on-demand", "--idle-unload", "120");
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toMatch(/residency:\s+on demand, unloads after 120 s idle\n/);
    const id = /^id:\s+(\S+)/m.exec(made.stdout)![1]!;
    expect((await cli("list", "--org", gw.orgId)).stdout).toMatch(/napper\s+draft\s+gguf\s+napper\s+local file\s+on demand \(120 s idle\)/);
    const back = await cli("update", id, "--residency", "always", "--json");
    expect(JSON.parse(back.stdout)).toMatchObject({ id, residency: "always", idle_unload_s: 120, changed: ["residency"] });
    const soon = await cli("update", id, "--idle-unload", "soon");
    expect([soon.code, soon.stderr]).toEqual([1, expect.stringContaining("'idle_unload_s' must be a whole number of seconds from 0 to 604,800")]);
  });

  it("stops routing a stack whose redeploy failed, though its old runtime still runs", async () => {
    const flaky = await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: "flaky" });
    expect((await chat("flaky")).status).toBe(200);
    expect((await patch(flaky, { model: "https://models.invalid/model.gguf" })).body).toMatchObject({ redeployed: true });
    await gw.relay.deployer.settled(flaky);
    expect((await stack(flaky)).state).toBe("failed");
    expect((await chat("flaky")).status).toBe(404);
    expect((await models()).includes("flaky")).toBe(false);
    expect((await operator("POST", `/admin/v1/stacks/${flaky}/undeploy`)).status).toBe(200);
  });

  it("shares a model id's requests between two replicas on one machine, says so, and says the other goes on serving when one is undeployed", async () => {
    const cli = (...args: string[]) => runCli(["admin", "stack", ...args, "--data-dir", gw.dataDir]);
    const made = await operator("POST", "/admin/v1/stacks", { org: gw.orgId, name: "second teller", machine: gw.machineId, runtime: "gguf", model: testModelPath(), model_id: gw.modelId });
    const replica = (await made.json()) as Stack;
    expect(replica.replicas).toEqual([{ id: gw.stackId, name: "story teller", machine_id: gw.machineId, state: "deployed", requests_last_hour: expect.any(Number) }]);
    expect(replica.requests_last_hour).toBe(0);
    expect((await operator("POST", `/admin/v1/stacks/${replica.id}/deploy`)).status).toBe(200);
    await gw.relay.deployer.settled(replica.id);
    expect((await stack(gw.stackId)).replicas).toEqual([{ id: replica.id, name: "second teller", machine_id: gw.machineId, state: "deployed", requests_last_hour: 0 }]);
    // Said where a stack is described, as by an update that changed nothing.
    expect((await cli("update", gw.stackId, "--name", "story teller")).stdout).toMatch(/replicas:\s+also served by second teller on \S+ \(deployed\): requests are shared\n/);
    // Conversations of their own (each its own key for the prompt cache): shared between the replicas.
    // (30 of them: with replicas' ids new each run, all on one replica is a chance of one in 2^29.)
    for (let i = 0; i < 30; i++) expect((await chat(gw.modelId, { max_tokens: 1, prompt_cache_key: `conversation ${i}` })).status).toBe(200);
    const served = ((await (await operator("GET", `/admin/v1/requests?org=${gw.orgId}&per_page=30`)).json()) as { data: { stack_id: string }[] }).data.map((r) => r.stack_id);
    const byReplica = served.filter((id) => id === replica.id).length;
    expect([byReplica > 0, served.filter((id) => id === gw.stackId).length]).toEqual([true, 30 - byReplica]);
    expect(byReplica).toBeLessThan(30);
    // Each replica's share of the last hour's requests, on the stack's view: those it served, not those refused
    // once it was chosen (a limit, a full queue), before any machine had them.
    const refused = { orgId: gw.orgId, at: Date.now(), requestId: "refused-after-routing", keyId: null, model: gw.modelId, stackId: replica.id, machineId: null, stream: false, status: 429, errorCode: "rate_limit_requests", promptTokens: 0, completionTokens: 0, latencyMs: 1, firstTokenMs: null, loadMs: null, captureJson: null, captureUntil: null };
    await gw.relay.store.requests.insert([refused, refused]);
    const shared = await stack(gw.stackId);
    expect(shared.replicas[0]!.requests_last_hour).toBe(byReplica);
    expect(shared.requests_last_hour).toBeGreaterThanOrEqual(30 - byReplica);
    const undeployed = await cli("undeploy", replica.id);
    expect(undeployed.stdout).toMatch(/replicas:\s+also served by story teller on \S+ \(deployed\): they go on serving /);
    expect((await chat(gw.modelId)).status).toBe(200);
    await gw.relay.deployer.settled(replica.id);
  });

  it("refuses what the machine cannot run, a deployed stack moved to another machine, and a change while deploying", async () => {
    const mlx = await patch(gw.stackId, { runtime: "mlx" });
    expect([mlx.status, mlx.body.error.code]).toEqual([400, "incompatible_stack"]);
    const { machineId, agent } = await gw.addMachine(gw.orgId);
    const moved = await patch(gw.stackId, { machine: machineId });
    expect([moved.status, moved.body.error.message]).toEqual([409, expect.stringContaining("undeploy it first")]);
    expect(await stack(gw.stackId)).toMatchObject({ machine_id: gw.machineId, runtime: "gguf", state: "deployed" });

    // A draft moves; deployed to a machine that is offline it stays deploying, and refuses a new model until it settles.
    const draft = await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: "wanderer", deploy: false });
    expect((await patch(draft, { machine: machineId })).body).toMatchObject({ machine_id: machineId, state: "draft", changed: ["machine"], redeployed: false });
    await agent.stop();
    expect((await operator("POST", `/admin/v1/stacks/${draft}/deploy`)).status).toBe(200);
    const busy = await patch(draft, { model: "/models/other.gguf" });
    expect([busy.status, busy.body.error.message]).toEqual([409, expect.stringContaining("is deploying")]);
    expect((await patch(draft, { name: "renamed while deploying" })).body).toMatchObject({ state: "deploying", name: "renamed while deploying" });
  });

  it("deletes a draft or failed stack, never a deployed one, and keys restricted to it reach nothing", async () => {
    const deployed = await operator("DELETE", `/admin/v1/stacks/${gw.stackId}`);
    expect([deployed.status, ((await deployed.json()) as { error: { message: string } }).error.message]).toEqual([409, expect.stringContaining("undeploy it first")]);
    expect((await chat(gw.modelId)).status).toBe(200);

    const doomed = await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: "doomed" });
    const key = (await (await operator("POST", "/admin/v1/keys", { org: gw.orgId, stacks: [doomed] })).json()) as { key: string };
    expect((await operator("POST", `/admin/v1/stacks/${doomed}/undeploy`)).status).toBe(200);
    const res = await operator("DELETE", `/admin/v1/stacks/${doomed}`);
    expect([res.status, await res.json()]).toEqual([200, { id: doomed, deleted: true }]);
    expect((await operator("GET", `/admin/v1/stacks/${doomed}`)).status).toBe(404);
    expect((await operator("DELETE", `/admin/v1/stacks/${doomed}`)).status).toBe(404);
    const restricted = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: "Hi" }], max_tokens: 1 }),
    });
    expect(restricted.status).toBe(403);
    expect((await audit("stack.deleted")).map((e) => [e.target?.id, e.detail])).toEqual([[doomed, { model: "doomed" }]]);

    // A stack whose deploy failed is undeployed from its machine, then deleted.
    const broken = (await (await operator("POST", "/admin/v1/stacks", { org: gw.orgId, name: "broken", machine: gw.machineId, runtime: "gguf", model: "https://models.invalid/model.gguf" })).json()) as Stack;
    expect((await operator("POST", `/admin/v1/stacks/${broken.id}/deploy`)).status).toBe(200);
    await gw.relay.deployer.settled(broken.id);
    expect((await stack(broken.id)).state).toBe("failed");
    expect((await operator("DELETE", `/admin/v1/stacks/${broken.id}`)).status).toBe(200);
    expect(gw.agent.host.list().map((s) => s.stackId)).not.toContain(broken.id);
  });

  it("lets only admins change or delete a stack", async () => {
    await operator("POST", "/admin/v1/users", { org: gw.orgId, login: "sam", password: "correct horse battery", role: "member" });
    const member = new WebClient(gw.relay.url);
    expect((await member.signIn("sam", "correct horse battery")).status).toBe(200);
    expect((await member.call("PATCH", `/admin/v1/stacks/${gw.stackId}`, { name: "mine" })).status).toBe(403);
    const draft = await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: "kept", deploy: false });
    expect((await member.call("DELETE", `/admin/v1/stacks/${draft}`)).status).toBe(403);
    expect((await stack(draft)).name).toBe("kept");
  });

  it("shows a model reference with its credentials redacted, in the API, its search and the audit log, and keeps the whole one through an edit", async () => {
    const signed = "http://deploy:s3cret-pw@fake.invalid/v1?sig=t0psecret#fake";
    const created = await operator("POST", "/admin/v1/stacks", { org: gw.orgId, name: "signed", machine: gw.machineId, runtime: "openai", model: signed, model_id: "signed" });
    expect(created.status).toBe(201);
    const view = (await created.json()) as { id: string; model_ref: string };
    expect(view.model_ref).toBe("http://deploy:[redacted]@fake.invalid/v1?[redacted]#fake");
    expect(((await (await operator("GET", `/admin/v1/stacks/${view.id}`)).json()) as { model_ref: string }).model_ref).toBe(view.model_ref);
    // A search cannot spell out what the page hides.
    const search = async (q: string) => ((await (await operator("GET", `/admin/v1/stacks?org=${gw.orgId}&q=${encodeURIComponent(q)}`)).json()) as { data: { id: string }[] }).data.map((s) => s.id);
    expect(await search("t0psecret")).toEqual([]);
    expect(await search("s3cret")).toEqual([]);
    expect(await search("fake.invalid/v1")).toContain(view.id);
    // An edit form sends the reference back as shown: the whole one is kept, and only the name changed.
    const edited = await operator("PATCH", `/admin/v1/stacks/${view.id}`, { name: "signed-2", model: view.model_ref });
    expect([edited.status, ((await edited.json()) as { changed: string[] }).changed]).toEqual([200, ["name"]]);
    expect((await gw.relay.store.stacks.get(view.id))!.modelRef).toBe(signed);
    // A new reference replaces it, and the audit log never held the credentials.
    const replaced = await operator("PATCH", `/admin/v1/stacks/${view.id}`, { model: "http://fake.invalid/v1#fake" });
    expect(((await replaced.json()) as { changed: string[] }).changed).toContain("model");
    const audit = JSON.stringify(await (await operator("GET", `/admin/v1/audit?org=${gw.orgId}&action=stack`)).json());
    expect(audit).toContain("http://deploy:[redacted]@fake.invalid/v1?[redacted]#fake");
    expect(audit).not.toContain("s3cret");
    expect(audit).not.toContain("t0psecret");
  });
});
