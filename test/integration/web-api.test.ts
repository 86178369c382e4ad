import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { get } from "node:http";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { resolveAgentConfig, startAgent, type Agent } from "../../agent/index.js";
import { silentLogger } from "../../proto/index.js";
import { WebSessions } from "../../relay/auth/index.js";
import { resolveRelayConfig } from "../../relay/index.js";
import { startRelay } from "../../relay/start/start-relay.js";
import { hashPassword } from "../../relay/keys/index.js";
import { fixtureSource } from "../helpers/hardware-fixtures.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { sseEvents, WebClient } from "../helpers/web-client.js";
import { readTogether } from "../helpers/read-together.js";
import type { Compatibility, Usage } from "../../relay/admin-contract/index.js";
import { testModelPath } from "../helpers/models.js";
import { OP } from "../helpers/operator.js";

// The admin API as the web application uses it: a session cookie and a CSRF token instead of the admin token.
describe("the web application's API: sign-in, sessions, roles and organizations", () => {
  let gw: TestGateway;
  let origin: string;
  const operator = (method: string, path: string, body?: unknown) =>
    fetch(`${origin}${path}`, { method, headers: { authorization: `Bearer ${gw.relay.adminToken}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  const addUser = async (org: string, login: string, role: "admin" | "member", password = "correct horse battery") => {
    const res = await operator("POST", "/admin/v1/users", { org, login, role, password });
    expect(res.status, await res.clone().text()).toBe(201);
    return password;
  };
  const signedIn = async (login: string, password: string) => {
    const c = new WebClient(origin);
    expect((await c.signIn(login, password)).status).toBe(200);
    return c;
  };

  beforeAll(async () => {
    gw = await startTestGateway();
    origin = gw.relay.url;
    await addUser(gw.orgId, "ada@example.com", "admin");
    await addUser(gw.orgId, "mo", "member");
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("gives a login to one of two people added with it at once; the other gets 409 naming the login", async () => {
    // Both find the login free before either adds it (as two relays, or a slow database, would have them).
    const users = gw.relay.store.users;
    const findByLogin = users.findByLogin.bind(users);
    users.findByLogin = readTogether(findByLogin);
    let both: Response[];
    try {
      both = await Promise.all([0, 1].map(() => operator("POST", "/admin/v1/users", { org: gw.orgId, login: "twice@example.com", role: "member", password: "correct horse battery" })));
    } finally {
      users.findByLogin = findByLogin;
    }
    expect(both.map((r) => r.status).sort()).toEqual([201, 409]);
    const refused = both.find((r) => r.status === 409)!;
    expect(((await refused.json()) as { error: { code: string; param: string } }).error).toMatchObject({ code: "conflict", param: "login" });
  });

  it("signs in with a login and password into an HttpOnly, SameSite=Strict session, and signs out", async () => {
    const c = new WebClient(origin);
    const res = await c.signIn("ada@example.com", "correct horse battery");
    expect(res.status).toBe(200);
    const cookie = res.headers.get("set-cookie")!;
    expect(cookie).toMatch(/^makina_session=[\w-]{40,}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=604800$/);
    expect(await res.json()).toEqual({ user: { id: expect.stringMatching(/^user_/), login: "ada@example.com", role: "admin" }, org: { id: gw.orgId, name: "Test Org", slug: "test-org" }, csrf_token: c.csrf });
    expect((await c.json<{ user: { login: string } }>("GET", "/auth/v1/session")).user.login).toBe("ada@example.com");
    expect((await c.json<{ data: { id: string }[] }>("GET", "/admin/v1/machines")).data.map((m) => m.id)).toEqual([gw.machineId]);

    expect((await c.call("POST", "/auth/v1/sign-out")).status).toBe(200);
    expect((await c.call("GET", "/auth/v1/session")).status).toBe(401);
    const after = await c.call("GET", "/admin/v1/machines");
    expect(after.status).toBe(401);
    expect(((await after.json()) as { error: { code: string } }).error.code).toBe("invalid_admin_token");
  });

  it("says plainly when the login or password is wrong, the same for an unknown login", async () => {
    for (const [login, password] of [
      ["ada@example.com", "wrong password!"],
      ["nobody", "correct horse battery"],
    ]) {
      const res = await new WebClient(origin).signIn(login!, password!);
      expect(res.status).toBe(401);
      expect(res.headers.get("set-cookie")).toBeNull();
      expect(await res.json()).toEqual({ error: { message: "The login or password is not right.", type: "authentication_error", param: "password", code: "invalid_credentials" } });
    }
    const empty = await new WebClient(origin).signIn("", "x");
    expect(((await empty.json()) as { error: { code: string; param: string } }).error).toMatchObject({ code: "missing_required_parameter", param: "login" });
  });

  it("says who may not call before it says what is wrong with the call", async () => {
    const member = await signedIn("mo", "correct horse battery");
    const answer = async (res: Response) => [res.status, ((await res.json()) as { error: { code: string } }).error.code];
    // A member's admin call with a body that is wrong too: refused as a member's.
    expect(await answer(await member.call("POST", "/admin/v1/machines", {}))).toEqual([403, "permission_denied"]);
    expect(await answer(await member.call("POST", "/admin/v1/users", { login: 5 }))).toEqual([403, "permission_denied"]);
    expect(await answer(await member.call("PATCH", `/admin/v1/orgs/${gw.orgId}`, { default_key_rpm: "many" }))).toEqual([403, "permission_denied"]);
    // A password change without the CSRF token, or without a session, with an empty body.
    expect(await answer(await member.call("POST", "/auth/v1/password", {}, { csrf: false }))).toEqual([403, "invalid_csrf_token"]);
    expect(await answer(await new WebClient(origin).call("POST", "/auth/v1/password", {}))).toEqual([401, "invalid_credentials"]);
    // Once the caller may, the body's problem is named.
    const admin = await signedIn("ada@example.com", "correct horse battery");
    const res = await admin.call("POST", "/admin/v1/machines", {});
    expect([res.status, ((await res.json()) as { error: { code: string; param: string } }).error]).toEqual([400, expect.objectContaining({ code: "missing_required_parameter", param: "name" })]);
  });

  it("refuses a field a route does not take, naming it, and changes nothing", async () => {
    const refusal = async (res: Response) => [res.status, ((await res.json()) as { error: { code: string; param: string; message: string } }).error];
    const unknown = (param: string) => [400, { code: "unknown_parameter", param, message: `Unrecognized request argument supplied: ${param}`, type: "invalid_request_error" }];
    const keyNames = async () => ((await (await operator("GET", `/admin/v1/keys?org=${gw.orgId}&per_page=1000`)).json()) as { data: { name: string | null }[] }).data.map((k) => k.name);
    // A typo of rpm used to make a key without a limit.
    expect(await refusal(await operator("POST", "/admin/v1/keys", { org: gw.orgId, name: "typo", rmp: 5 }))).toEqual(unknown("rmp"));
    expect(await keyNames()).not.toContain("typo");

    // An edit with an unknown field changes none of the fields it names either.
    const c = await signedIn("ada@example.com", "correct horse battery");
    const key = await c.json<{ id: string; name: string; rpm: number | null }>("POST", "/admin/v1/keys", { name: "strict", rpm: 60 });
    expect(await refusal(await c.call("PATCH", `/admin/v1/keys/${key.id}`, { name: "renamed", rpm: 5, tmp: 100 }))).toEqual(unknown("tmp"));
    expect(await c.json("GET", `/admin/v1/keys?q=${key.id}`)).toMatchObject({ data: [{ id: key.id, name: "strict", rpm: 60, tpm: null }] });
    // A route that takes no body takes no field: the key is not revoked with a reason it would drop.
    expect(await refusal(await c.call("POST", `/admin/v1/keys/${key.id}/revoke`, { reason: "leaked" }))).toEqual(unknown("reason"));
    expect((await gw.relay.store.keys.get(key.id))?.state).toBe("active");
    // Queries too, whether the route takes one or not.
    expect(await refusal(await c.call("GET", "/admin/v1/keys?perpage=5"))).toEqual(unknown("perpage"));
    expect(await refusal(await c.call("GET", "/admin/v1/orgs?org=test-org"))).toEqual(unknown("org"));

    // Sign-in too, right password or not: no session is made.
    const signIn = await fetch(`${origin}/auth/v1/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ login: "ada@example.com", password: "correct horse battery", remember_me: true }) });
    expect(signIn.headers.get("set-cookie")).toBeNull();
    expect(await refusal(signIn)).toEqual(unknown("remember_me"));
  });

  it("refuses a state-changing call without the session's CSRF token", async () => {
    const c = await signedIn("ada@example.com", "correct horse battery");
    const refused = async (res: Response) => {
      expect(res.status).toBe(403);
      expect(((await res.json()) as { error: { code: string; type: string } }).error).toMatchObject({ code: "invalid_csrf_token", type: "permission_error" });
    };
    await refused(await c.call("POST", "/admin/v1/keys", { name: "no csrf" }, { csrf: false }));
    const token = c.csrf;
    c.csrf = "not-the-token";
    await refused(await c.call("POST", "/admin/v1/keys", { name: "no csrf" }));
    await refused(await c.call("POST", "/auth/v1/sign-out"));
    expect((await gw.relay.store.keys.listByOrg(gw.orgId)).map((k) => k.name)).not.toContain("no csrf");
    // Reads need no token; with the session's own token the same call goes through.
    expect((await c.call("GET", "/admin/v1/keys")).status).toBe(200);
    c.csrf = token;
    expect((await c.call("POST", "/admin/v1/keys", { name: "with csrf" })).status).toBe(201);
  });

  it("throttles failed sign-ins of a login, even when the right password comes next", async () => {
    const password = await addUser(gw.orgId, "target", "member");
    const c = new WebClient(origin);
    for (let i = 0; i < 5; i++) expect((await c.signIn("target", `guess number ${i}`)).status).toBe(401);
    const held = await c.signIn("target", `guess number 6`);
    expect(held.status).toBe(429);
    expect(Number(held.headers.get("retry-after"))).toBeGreaterThanOrEqual(29);
    expect(((await held.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: "sign_in_throttled", message: expect.stringMatching(/^Too many failed sign-ins\. Try again in \d+ seconds\.$/) });
    expect((await c.signIn("target", password)).status).toBe(429);
    // Another login from the same address is not held back by it.
    expect((await new WebClient(origin).signIn("mo", "correct horse battery")).status).toBe(200);
  });

  it("changes a password: the old one stops working and the user's other sessions end", async () => {
    const password = await addUser(gw.orgId, "pat", "member");
    const here = await signedIn("pat", password);
    const elsewhere = await signedIn("pat", password);
    const short = await here.call("POST", "/auth/v1/password", { current_password: password, new_password: "short" });
    expect(((await short.json()) as { error: { param: string; message: string } }).error).toMatchObject({ param: "new_password", message: "The password must have at least 10 characters." });
    const wrong = await here.call("POST", "/auth/v1/password", { current_password: "not it at all", new_password: "a much longer one" });
    expect(((await wrong.json()) as { error: { code: string; param: string } }).error).toMatchObject({ code: "invalid_credentials", param: "current_password" });

    expect((await here.call("POST", "/auth/v1/password", { current_password: password, new_password: "a much longer one" })).status).toBe(200);
    expect((await here.call("GET", "/auth/v1/session")).status).toBe(200);
    expect((await elsewhere.call("GET", "/auth/v1/session")).status).toBe(401);
    expect((await new WebClient(origin).signIn("pat", password)).status).toBe(401);
    expect((await new WebClient(origin).signIn("pat", "a much longer one")).status).toBe(200);
  });

  it("lets a member see the pages and manage its own keys, but not administer", async () => {
    const member = await signedIn("mo", "correct horse battery");
    const admin = await signedIn("ada@example.com", "correct horse battery");
    expect((await member.call("GET", "/admin/v1/machines")).status).toBe(200);
    expect((await member.call("GET", `/admin/v1/stacks/${gw.stackId}`)).status).toBe(200);
    for (const [path, body] of [
      ["/admin/v1/machines", { name: "sneaky" }],
      ["/admin/v1/stacks", { name: "s", machine: gw.machineId, runtime: "gguf", model: "/x.gguf" }],
      [`/admin/v1/stacks/${gw.stackId}/undeploy`, undefined],
      ["/admin/v1/users", { login: "friend", password: "0123456789", role: "admin" }],
    ] as const) {
      const res = await member.call("POST", path, body);
      expect(res.status, path).toBe(403);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("permission_denied");
    }
    expect((await gw.relay.control.stacks.get(OP, gw.stackId)).state).toBe("deployed");

    const own = await member.json<{ id: string; key: string; created_by: string }>("POST", "/admin/v1/keys", { name: "mine" });
    const theirs = await admin.json<{ id: string }>("POST", "/admin/v1/keys", { name: "the admin's" });
    const denied = await member.call("POST", `/admin/v1/keys/${theirs.id}/revoke`);
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as { error: { message: string } }).error.message).toBe("Members can revoke only the keys they created.");
    expect((await member.call("POST", `/admin/v1/keys/${own.id}/revoke`)).status).toBe(200);
    expect((await gw.relay.store.keys.get(own.id))?.state).toBe("revoked");
    expect((await gw.relay.store.keys.get(theirs.id))?.state).toBe("active");
    // An admin revokes anyone's key of the organization.
    expect((await admin.call("POST", `/admin/v1/keys/${theirs.id}/revoke`)).status).toBe(200);
  });

  it("shows a user of another organization nothing of this one", async () => {
    const other = (await (await operator("POST", "/admin/v1/orgs", { name: "Rivals" })).json()) as { id: string; slug: string };
    const rival = await signedIn(`rival@rivals`, await addUser(other.id, "rival@rivals", "admin"));
    const ours = await gw.relay.control.keys.create(OP, gw.orgId, { name: "ours" });
    expect((await rival.json<{ data: unknown[] }>("GET", "/admin/v1/machines")).data).toEqual([]);
    expect((await rival.json<{ data: unknown[] }>("GET", "/admin/v1/stacks")).data).toEqual([]);
    expect((await rival.json<{ data: { name: string }[] }>("GET", "/admin/v1/keys")).data).toEqual([]);
    expect((await rival.json<{ data: { login: string }[] }>("GET", "/admin/v1/users")).data.map((u) => u.login)).toEqual(["rival@rivals"]);
    expect((await rival.json<{ data: { slug: string }[] }>("GET", "/admin/v1/orgs")).data.map((o) => o.slug)).toEqual(["rivals"]);
    for (const [method, path] of [
      ["GET", `/admin/v1/machines/${gw.machineId}`],
      ["GET", `/admin/v1/stacks/${gw.stackId}`],
      ["POST", `/admin/v1/stacks/${gw.stackId}/undeploy`],
      ["POST", `/admin/v1/keys/${ours.record.id}/revoke`],
      ["GET", "/admin/v1/machines?org=test-org"],
      ["GET", `/admin/v1/keys?org=${gw.orgId}`],
    ] as const) {
      const res = await rival.call(method, path);
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    // Naming this organization's machine in a key or a stack does not reach it either.
    expect((await rival.call("POST", "/admin/v1/keys", { machines: [gw.machineId] })).status).toBe(404);
    expect((await rival.call("POST", "/admin/v1/stacks", { name: "x", machine: gw.machineId, runtime: "gguf", model: "/x.gguf" })).status).toBe(404);
    expect((await gw.relay.store.keys.get(ours.record.id))?.state).toBe("active");
    expect((await gw.relay.control.stacks.get(OP, gw.stackId)).state).toBe("deployed");
    expect((await operator("POST", "/admin/v1/orgs", { name: "x" })).status).toBe(201);
    expect((await rival.call("POST", "/admin/v1/orgs", { name: "y" })).status).toBe(403);
  });

  it("streams the organization's changes as server-sent events, and only its own", async () => {
    const other = (await (await operator("POST", "/admin/v1/orgs", { name: "Elsewhere" })).json()) as { id: string };
    const c = await signedIn("ada@example.com", "correct horse battery");
    const controller = new AbortController();
    const res = await fetch(`${origin}/admin/v1/events`, { headers: { cookie: c.cookie }, signal: controller.signal });
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const events = sseEvents(res);
    try {
      // Announced in this order: another organization's change first, then ours. Were the stream not
      // filtered, the first event read would be theirs.
      await gw.relay.control.keys.create(OP, other.id, { name: "theirs" });
      const mine = await c.json<{ id: string }>("POST", "/admin/v1/keys", { name: "watched" });
      expect((await events.next()).value).toEqual({ event: "key", data: { type: "key", key_id: mine.id } });
      await c.call("POST", `/admin/v1/stacks/${gw.stackId}/undeploy`);
      expect((await events.next()).value).toEqual({ event: "stack", data: { type: "stack", stack_id: gw.stackId } });
    } finally {
      controller.abort();
      await events.return(undefined);
      await gw.relay.control.stacks.deploy(OP, gw.stackId);
      await gw.relay.deployer.settled(gw.stackId);
    }
    expect((await gw.relay.control.stacks.get(OP, gw.stackId)).state).toBe("deployed");
  });

  it("shows what a machine hosts, as it reports it over the link: runtimes and models on disk", async () => {
    const c = await signedIn("ada@example.com", "correct horse battery");
    type Inventory = { runtimes: { stack_id: string; runtime: string; state: string; model_id: string; endpoint: string; version: string }[]; models: { name: string; size_bytes: number; sha256: string; stack_ids: string[] }[] };
    const inventory = async () => (await c.json<{ inventory: Inventory | null }>("GET", `/admin/v1/machines/${gw.machineId}`)).inventory;
    // The stack was just redeployed: the machine reports it loading, then ready (at most once a second).
    await vi.waitFor(
      async () =>
        expect((await inventory())?.runtimes).toEqual([
          {
            stack_id: gw.stackId,
            model_id: "stories",
            runtime: "gguf",
            version: expect.stringMatching(/^node-llama-cpp /),
            state: "ready",
            endpoint: expect.stringMatching(/^unix:\//),
            error: "",
            residency: "always",
            // Loaded: what the model process says the model and its context hold, with the runtime's own.
            memory_bytes: expect.any(Number),
            loaded: true,
          },
        ]),
      { timeout: 10_000, interval: 50 },
    );
    expect((await inventory())!.models).toEqual([
      expect.objectContaining({ name: "stories260K.gguf", format: "gguf", size_bytes: 1185376, sha256: "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d", stack_ids: [gw.stackId] }),
    ]);

    // A second stack appears when deployed and goes when undeployed; the page hears of each change.
    const second = await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: "second" });
    await vi.waitFor(async () => expect((await inventory())!.runtimes.map((r) => r.model_id).sort()).toEqual(["second", "stories"]), { timeout: 10_000, interval: 50 });
    expect((await inventory())!.models[0]!.stack_ids.sort()).toEqual([gw.stackId, second].sort());
    await c.call("POST", `/admin/v1/stacks/${second}/undeploy`);
    await vi.waitFor(async () => expect((await inventory())!.runtimes.map((r) => r.model_id)).toEqual(["stories"]), { timeout: 10_000, interval: 50 });
  });

  it("counts gateway calls per key and model for the usage page and the keys list", async () => {
    const c = await signedIn("ada@example.com", "correct horse battery");
    const key = await c.json<{ id: string; key: string }>("POST", "/admin/v1/keys", { name: "counted", stacks: [gw.stackId] });
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: key.key, maxRetries: 0 });
    const a = await client.chat.completions.create({ model: gw.modelId, messages: [{ role: "user", content: "Once" }], max_tokens: 3 });
    const b = await client.chat.completions.create({ model: gw.modelId, messages: [{ role: "user", content: "Twice" }], max_tokens: 5, stream: true, stream_options: { include_usage: true } });
    let streamedUsage = 0;
    for await (const chunk of b) streamedUsage += chunk.usage?.total_tokens ?? 0;
    const tokens = a.usage!.total_tokens + streamedUsage;

    const usage = await c.json<Usage>("GET", "/admin/v1/usage?range=24h&by=key");
    const mine = usage.series.find((s) => s.group === key.id)!;
    // Named by the relay: a page never needs every key to say whose use it is.
    expect([mine.name, usage.totals.find((t) => t.group === key.id)!.name]).toEqual(["counted", "counted"]);
    expect(mine.total.requests).toBe(2);
    expect(mine.total.prompt_tokens + mine.total.completion_tokens).toBe(tokens);
    expect(mine.total.completion_tokens).toBe(8);
    expect(mine.points).toHaveLength(24);
    expect(mine.points.at(-1)!.requests).toBe(2);
    const byModel = await c.json<Usage>("GET", "/admin/v1/usage?range=30d&by=model");
    expect(byModel.series.find((s) => s.group === gw.modelId)!).toMatchObject({ name: null });
    expect(byModel.series.find((s) => s.group === gw.modelId)!.total.requests).toBeGreaterThanOrEqual(2);
    const listed = (await c.json<{ data: { id: string; requests_24h: number; tokens_24h: number }[] }>("GET", "/admin/v1/keys")).data.find((k) => k.id === key.id);
    expect(listed).toMatchObject({ requests_24h: 2, tokens_24h: tokens });
    const bad = await c.call("GET", "/admin/v1/usage?range=1y");
    expect(((await bad.json()) as { error: { param: string } }).error.param).toBe("range");
  });

  describe("the compatibility rules, as the Forge and stack create use them", () => {
    let agent: Agent;
    let cpuBox: string;
    beforeAll(async () => {
      const { machine, token } = await gw.relay.control.machines.create(OP, { org: gw.orgId, name: "cpu-box" });
      cpuBox = machine.id;
      agent = await startAgent(resolveAgentConfig({ flags: { server: gw.relay.linkAddress, machineId: machine.id, token, dataDir: join(gw.dataDir, "cpu-box"), threads: 1, gpu: false } }), {
        log: silentLogger(),
        hardwareSource: fixtureSource("cpu-vm"),
      });
      await agent.link.whenOnline();
    });
    afterAll(async () => {
      await agent?.stop();
    });

    it("answers the Forge's panel, and refuses to create what it fails with the same reasons", async () => {
      const c = await signedIn("ada@example.com", "correct horse battery");
      const big = "hf:bartowski/Llama-3.3-70B-Instruct-GGUF/Llama-3.3-70B-Instruct-Q4_K_M.gguf";
      const panel = await c.json<{ ok: boolean; checks: { topic: string; level: string; message: string }[] }>("POST", "/admin/v1/compatibility", { machine: cpuBox, runtime: "gguf", model: big });
      expect(panel.ok).toBe(false);
      const memory = panel.checks.find((c) => c.topic === "memory")!;
      expect(memory).toMatchObject({ level: "fail", message: "Needs about 44.3 GiB (39.6 GiB weights + 2.5 GiB KV cache for 2 × 4,096 tokens), more than the machine's 23.5 GiB of RAM." });
      const refused = await c.call("POST", "/admin/v1/stacks", { name: "too big", machine: cpuBox, runtime: "gguf", model: big });
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: { code: string; message: string } }).error).toEqual(expect.objectContaining({ code: "incompatible_stack", message: `This stack cannot run on cpu-box: ${memory.message}` }));

      const vllm = await c.json<{ ok: boolean; checks: { level: string; message: string }[] }>("POST", "/admin/v1/compatibility", { machine: cpuBox, runtime: "vllm", model: "Qwen/Qwen2.5-7B-Instruct" });
      expect(vllm.ok).toBe(false);
      expect(vllm.checks.filter((x) => x.level === "fail").map((x) => x.message)).toEqual(["vLLM needs an NVIDIA GPU; none was detected on this machine."]);

      const small = await c.json<{ ok: boolean }>("POST", "/admin/v1/compatibility", { machine: cpuBox, runtime: "gguf", model: "hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf" });
      expect(small.ok).toBe(true);
      const catalog = await c.json<{ data: { ref: string; runtime: string; size_bytes: number }[] }>("GET", "/admin/v1/catalog");
      expect(catalog.data.map((m) => m.runtime)).toEqual(expect.arrayContaining(["gguf", "vllm", "mlx"]));
      expect(catalog.data.find((m) => m.ref === big)!.size_bytes).toBe(42.5e9);

      // Names and model ids are what people read and paste: a safe charset and length.
      const refusedAs = async (path: string, body: Record<string, unknown>) => {
        const res = await c.call("POST", path, body);
        return [res.status, ((await res.json()) as { error: { code: string; param: string } }).error];
      };
      const stackBody = { machine: cpuBox, runtime: "gguf", model: "hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf" };
      for (const model_id of ["has space", "quote'd", "<script>", "-leading", "x".repeat(129), "naïve"]) {
        expect(await refusedAs("/admin/v1/stacks", { ...stackBody, name: "ok", model_id })).toEqual([400, expect.objectContaining({ code: "invalid_value", param: "model_id" })]);
      }
      for (const name of ["red \u001b[31malert", "evil\u202etxt.exe", "line\nbreak", "n".repeat(101)]) {
        expect(await refusedAs("/admin/v1/stacks", { ...stackBody, name })).toEqual([400, expect.objectContaining({ code: "invalid_value", param: "name" })]);
        expect(await refusedAs("/admin/v1/machines", { name })).toEqual([400, expect.objectContaining({ code: "invalid_value", param: "name" })]);
        expect(await refusedAs("/admin/v1/keys", { name })).toEqual([400, expect.objectContaining({ code: "invalid_value", param: "name" })]);
      }
      // An empty model id is left out: the relay makes one from the file's name.
      const unnamed = await c.call("POST", "/admin/v1/stacks", { ...stackBody, name: "no id given", model_id: "" });
      expect([unnamed.status, ((await unnamed.json()) as { model_id: string }).model_id]).toEqual([201, "qwen2.5-0.5b-instruct-q4_k_m"]);
      // People's names may be any language, with spaces and apostrophes.
      const named = await c.call("POST", "/admin/v1/keys", { name: "Zoë's laptop – 東京" });
      expect(named.status).toBe(201);

      // A model reference is at most 2,048 characters, for the panel and for a stack.
      const long = `https://models.example/${"x".repeat(2040)}.gguf`;
      for (const path of ["/admin/v1/compatibility", "/admin/v1/stacks"]) {
        const res = await c.call("POST", path, { ...(path === "/admin/v1/stacks" && { name: "long" }), machine: cpuBox, runtime: "gguf", model: long });
        expect([path, res.status, ((await res.json()) as { error: { code: string; param: string } }).error]).toEqual([path, 400, expect.objectContaining({ code: "invalid_value", param: "model" })]);
      }
    });

    it("asks the machine for a model named by its path: one that is not there, or is not GGUF, cannot run; one that is gets its header read there", async () => {
      const c = await signedIn("ada@example.com", "correct horse battery");
      const panel = (model: string, runtime = "gguf") => c.json<Compatibility>("POST", "/admin/v1/compatibility", { machine: cpuBox, runtime, model });
      const failures = (p: Compatibility) => p.checks.filter((x) => x.level === "fail").map((x) => [x.param, x.message]);
      const missing = join(gw.dataDir, "not-on-this-machine.gguf");
      const none = await panel(missing);
      expect([none.ok, failures(none)]).toEqual([false, [["model", `There is no file at ${missing} on this machine.`]]]);
      // Stack create applies the same rule, with the same reason.
      const refused = await c.call("POST", "/admin/v1/stacks", { name: "nowhere", machine: cpuBox, runtime: "gguf", model: missing });
      expect([refused.status, ((await refused.json()) as { error: { code: string; message: string } }).error]).toEqual([
        400,
        expect.objectContaining({ code: "incompatible_stack", message: `This stack cannot run on cpu-box: There is no file at ${missing} on this machine.` }),
      ]);
      // A directory, and a file that is not GGUF, are not what the GGUF runtime loads.
      const folder = join(gw.dataDir, "folder.gguf");
      mkdirSync(folder);
      expect(failures(await panel(folder))).toEqual([["model", `${folder} is a directory on this machine; the GGUF runtime needs a .gguf file.`]]);
      const notGguf = join(gw.dataDir, "notes.gguf");
      writeFileSync(notGguf, "these are notes, not weights");
      // The real model: its size and its context's memory come from its header, read on the machine.
      const real = await panel(testModelPath());
      expect(real.ok).toBe(true);
      expect(real.checks.find((x) => x.topic === "memory")!.message).toMatch(/^Needs about [\d.]+ MiB \(1\.1 MiB weights \+ [\d.]+ MiB KV cache for 2 × 2,048 tokens\); fits in 23\.5 GiB of RAM\.$/);
      // vLLM takes a hub id as it is; a path it looks for on the machine like any other.
      expect((await panel("Qwen/Qwen2.5-7B-Instruct", "vllm")).checks.filter((x) => x.param === "model" && x.level === "fail")).toEqual([]);
      expect(failures(await panel(join(gw.dataDir, "no-such-dir"), "vllm"))).toEqual(expect.arrayContaining([["model", `There is no file at ${join(gw.dataDir, "no-such-dir")} on this machine.`]]));

      // Only admins, who make stacks, have the machine looked at: a member's panel leaves a path unknown, so a member
      // cannot probe the machine's disk through it.
      const member = await signedIn("mo", "correct horse battery");
      const asMember = await member.json<Compatibility>("POST", "/admin/v1/compatibility", { machine: cpuBox, runtime: "gguf", model: `${missing}.other.gguf` });
      expect([asMember.ok, failures(asMember)]).toEqual([true, []]);
      expect(failures(await member.json<Compatibility>("POST", "/admin/v1/compatibility", { machine: cpuBox, runtime: "gguf", model: notGguf }))).toEqual([]);
      // What a file that is not GGUF held is not said: only that it is not one.
      expect(failures(await panel(notGguf))).toEqual([["model", `${notGguf} on this machine is not a GGUF model the runtime can read.`]]);
      // The GGUF runtime's question is about a .gguf file only: another file on the machine is not looked at.
      expect(failures(await panel("/etc/hostname"))).toEqual([["model", "The GGUF runtime needs a .gguf file (a path, an https:// URL or hf:owner/repo/file.gguf)."], ["model", "The GGUF runtime needs a .gguf file."]]);

      // A machine that is not linked cannot be asked: the file is unknown, not refused.
      const { machine: away } = await gw.relay.control.machines.create(OP, { org: gw.orgId, name: "away-box" });
      const unknown = await c.json<Compatibility>("POST", "/admin/v1/compatibility", { machine: away.id, runtime: "gguf", model: missing });
      expect([unknown.ok, failures(unknown)]).toEqual([null, []]);
    });
  });

  it("serves the web application at / without touching the gateway's and APIs' answers", async () => {
    const page = await fetch(`${origin}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("cache-control")).toBe("no-cache");
    expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
    const html = await page.text();
    const script = /src="(\/assets\/main-[\w]+\.js)"/.exec(html)![1]!;
    const asset = await fetch(`${origin}${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    // Every body is read: one left unread holds its connection open after the relay has gone.
    expect((await asset.text()).length).toBeGreaterThan(0);
    // Sent compressed, as the browser takes it, within the bundle's budget (brotli 50 KiB, gzip 58 KiB, 184 KiB as built).
    const raw = await fetched(`${origin}${script}`, "identity");
    const br = await fetched(`${origin}${script}`, "gzip, deflate, br");
    const gzip = await fetched(`${origin}${script}`, "gzip");
    expect([raw.coding, br.coding, gzip.coding, br.vary]).toEqual([undefined, "br", "gzip", "Accept-Encoding"]);
    expect(brotliDecompressSync(br.bytes).equals(raw.bytes)).toBe(true);
    expect(gunzipSync(gzip.bytes).equals(raw.bytes)).toBe(true);
    expect(br.bytes.length).toBeLessThanOrEqual(50 * 1024);
    expect(gzip.bytes.length).toBeLessThanOrEqual(58 * 1024);
    expect(raw.bytes.length).toBeLessThanOrEqual(184 * 1024);
    const style = /href="(\/assets\/main-[\w]+\.css)"/.exec(html)![1]!;
    expect((await fetched(`${origin}${style}`, "br")).type).toBe("text/css; charset=utf-8");
    // The app's own routes load the page; everything else keeps its answer.
    for (const path of ["/stacks/stk_anything", "/stacks/stk_anything/edit", "/audit", "/account"]) expect(await (await fetch(`${origin}${path}`)).text(), path).toBe(html);
    // A browser following a link to a page that does not exist gets the app (which says so) with a 404, never JSON;
    // under the APIs' paths it gets their JSON 404 like everyone.
    const browser = { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" };
    for (const path of ["/nope", "/machines/a/b", "/stacks/a/delete"]) {
      const res = await fetch(`${origin}${path}`, { headers: browser });
      expect([path, res.status, res.headers.get("content-type"), await res.text()]).toEqual([path, 404, "text/html; charset=utf-8", html]);
    }
    for (const [path, code] of [["/v1/nope", "missing_api_key"], ["/admin/nope", "unknown_url"], ["/assets/nope.js", "unknown_url"]]) {
      const res = await fetch(`${origin}${path}`, { headers: browser });
      expect(res.headers.get("content-type"), path).toContain("application/json");
      expect(((await res.json()) as { error: { code: string } }).error.code, path).toBe(code);
    }
    for (const path of ["/v2/chat/completions", "/nope", "/machines/a/b"]) {
      const res = await fetch(`${origin}${path}`);
      expect(res.status, path).toBe(404);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("unknown_url");
    }
    const missing = await fetch(`${origin}/assets/nope.js`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe("unknown_url");
    const unknownV1 = await fetch(`${gw.baseURL}/no-such-thing`, { headers: { authorization: `Bearer ${gw.apiKey}` } });
    expect(unknownV1.status).toBe(404);
    expect(((await unknownV1.json()) as { error: { code: string } }).error.code).toBe("unknown_url");
    expect(await (await fetch(`${origin}/health`)).json()).toEqual({ status: "ok" });
    const unauthenticated = await fetch(`${origin}/admin/v1/nope`);
    expect([unauthenticated.status, ((await unauthenticated.json()) as { error: { code: string } }).error.code]).toEqual([401, "invalid_admin_token"]);
  });
});

describe("a relay stopping with web pages open", () => {
  it("ends their event streams cleanly instead of holding the stop until they are cut", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "makina-stop-"));
    const relay = await startRelay(resolveRelayConfig({ flags: { dataDir, port: 0, grpcPort: 0, grpcHost: "127.0.0.1" } }), { log: silentLogger() });
    try {
      const org = await relay.control.orgs.create(OP, { name: "Stopping" });
      await relay.store.users.create({ orgId: org.id, login: "op", passwordHash: await hashPassword("a long enough password"), role: "admin" });
      const c = new WebClient(relay.url);
      expect((await c.signIn("op", "a long enough password")).status).toBe(200);
      const res = await fetch(`${relay.url}/admin/v1/events`, { headers: { cookie: c.cookie } });
      const reader = res.body!.getReader();
      expect(new TextDecoder().decode((await reader.read()).value)).toContain(": makina events");
      const stopped = relay.stop();
      // A clean end of the stream (not a connection cut when the grace period runs out).
      expect(await reader.read()).toEqual({ done: true, value: undefined });
      await stopped;
    } finally {
      await relay.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe("web sessions over time", () => {
  it("expire after their lifetime, and expired ones are swept at the next sign-in", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "makina-sessions-"));
    const relay = await startRelay(resolveRelayConfig({ flags: { dataDir, port: 0, grpcPort: 0, grpcHost: "127.0.0.1" } }), { log: silentLogger() });
    try {
      const org = await relay.control.orgs.create(OP, { name: "Clocks" });
      await relay.store.users.create({ orgId: org.id, login: "tz", passwordHash: await hashPassword("a long enough password"), role: "admin" });
      let now = Date.now();
      const sessions = new WebSessions(relay.store, { ttlMs: 60_000, now: () => now });
      const signIn = async () => {
        const result = await sessions.signIn("tz", "a long enough password", "127.0.0.1");
        if (!result.ok) throw new Error(`sign-in refused: ${result.reason}`);
        return result.session;
      };
      const first = await signIn();
      expect((await sessions.resolve(first.cookie))?.user.login).toBe("tz");
      now += 61_000;
      expect(await sessions.resolve(first.cookie)).toBeUndefined();
      const stale = await signIn();
      now += 61_000;
      await signIn();
      const rows = await relay.store.db.selectFrom("sessions").select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
      expect(Number(rows.n)).toBe(1);
      expect(await sessions.resolve(stale.cookie)).toBeUndefined();
    } finally {
      await relay.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

// The operator's caps: a tenant cannot grow the relays' stacks, nor one person the keys, without end.
describe("the caps on stacks per organization and keys per person", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake", relayFlags: { maxStacksPerOrg: 2, maxKeysPerPerson: 2 } });
  });
  afterAll(async () => {
    await gw?.close();
  });
  const operator = (method: string, path: string, body?: unknown) =>
    fetch(`${gw.relay.url}${path}`, { method, headers: { authorization: `Bearer ${gw.relay.adminToken}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  const refusal = async (res: Response) => [res.status, ((await res.json()) as { error: { code: string; message: string } }).error] as const;

  it("refuses an organization's stack past MAKINA_MAX_STACKS_PER_ORG, saying so, and takes one again once one is deleted", async () => {
    const stack = (name: string) => operator("POST", "/admin/v1/stacks", { org: gw.orgId, name, machine: gw.machineId, runtime: "openai", model: `http://fake.invalid/v1#${name}` });
    // The gateway's own stack is the first.
    const second = await stack("second");
    expect(second.status).toBe(201);
    expect(await refusal(await stack("third"))).toEqual([
      409,
      expect.objectContaining({ code: "conflict", message: "This organization has 2 stacks, the most this relay allows (MAKINA_MAX_STACKS_PER_ORG): delete one first, or ask the relay's operator for more." }),
    ]);
    // Another organization has its own count.
    const other = (await (await operator("POST", "/admin/v1/orgs", { name: "Other" })).json()) as { id: string };
    const machine = (await (await operator("POST", "/admin/v1/machines", { org: other.id, name: "m" })).json()) as { id: string };
    expect((await operator("POST", "/admin/v1/stacks", { org: other.id, name: "theirs", machine: machine.id, runtime: "openai", model: "http://fake.invalid/v1#theirs" })).status).toBe(201);
    expect((await operator("DELETE", `/admin/v1/stacks/${((await second.json()) as { id: string }).id}`)).status).toBe(200);
    expect((await stack("third")).status).toBe(201);
  });

  it("refuses a person's key past MAKINA_MAX_KEYS_PER_PERSON, counts only keys not revoked, and never the operator's", async () => {
    expect((await operator("POST", "/admin/v1/users", { org: gw.orgId, login: "kim", role: "member", password: "correct horse battery" })).status).toBe(201);
    const kim = new WebClient(gw.relay.url);
    expect((await kim.signIn("kim", "correct horse battery")).status).toBe(200);
    const make = () => kim.call("POST", "/admin/v1/keys", { org: gw.orgId, name: "mine" });
    const first = (await (await make()).json()) as { id: string };
    expect((await make()).status).toBe(201);
    expect(await refusal(await make())).toEqual([
      409,
      expect.objectContaining({ code: "conflict", message: "You have 2 keys, the most one person may have on this relay (MAKINA_MAX_KEYS_PER_PERSON): revoke one you no longer use first." }),
    ]);
    expect((await kim.call("POST", `/admin/v1/keys/${first.id}/revoke`)).status).toBe(200);
    expect((await make()).status).toBe(201);
    // The operator (the admin token) is no person: its keys are not capped.
    for (let i = 0; i < 3; i++) expect((await operator("POST", "/admin/v1/keys", { org: gw.orgId, name: `ops-${i}` })).status).toBe(201);
  });
});

/** An HTTP GET as sent with `accept-encoding`, its body as it crossed the wire (not decoded). */
function fetched(url: string, acceptEncoding: string): Promise<{ coding: string | undefined; vary: string | undefined; type: string | undefined; bytes: Buffer }> {
  return new Promise((resolve, reject) => {
    get(url, { headers: { "accept-encoding": acceptEncoding } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ coding: res.headers["content-encoding"], vary: res.headers.vary, type: res.headers["content-type"], bytes: Buffer.concat(chunks) }));
      res.on("error", reject);
    }).on("error", reject);
  });
}
