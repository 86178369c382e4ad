import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiKey, AuditEvent } from "../../relay/admin-contract/index.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { WebClient } from "../helpers/web-client.js";
import { OP } from "../helpers/operator.js";

// Keys change after they are made (issue 21, point 3): name, restrictions, limits and an expiry, through the
// admin API, holding from the gateway's next request.
describe("editing API keys", () => {
  let gw: TestGateway;
  let otherStack: string;
  const operator = (method: string, path: string, body?: unknown) =>
    fetch(`${gw.relay.url}${path}`, { method, headers: { authorization: `Bearer ${gw.relay.adminToken}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  const create = async (body: Record<string, unknown> = {}) => {
    const res = await operator("POST", "/admin/v1/keys", { org: gw.orgId, ...body });
    expect(res.status, await res.clone().text()).toBe(201);
    return (await res.json()) as ApiKey & { key: string };
  };
  const patch = (id: string, body: unknown) => operator("PATCH", `/admin/v1/keys/${id}`, body);
  const chat = (key: string, model = gw.modelId) =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model, messages: [{ role: "user", content: "Hi" }], max_tokens: 1 }),
    });
  const errorOf = async (res: Response) => ((await res.json()) as { error: { code: string; param: string | null; message: string } }).error;

  beforeAll(async () => {
    gw = await startTestGateway();
    otherStack = await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: "other-model" });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("renames a key, sets its limits and restrictions, and the gateway's next request obeys them", async () => {
    const k = await create({ name: "ci" });
    expect((await chat(k.key)).headers.get("x-ratelimit-limit-requests")).toBeNull();

    const res = await patch(k.id, { name: "ci runner", rpm: 7, stacks: [otherStack] });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: k.id, name: "ci runner", rpm: 7, tpm: null, stack_ids: [otherStack], machine_ids: null, state: "active", expires_at: null });
    // The very next request: the key now has a limit, and its old model is outside its restriction.
    const refused = await chat(k.key);
    expect([refused.status, (await errorOf(refused)).code]).toEqual([403, "model_access_denied"]);
    const allowed = await chat(k.key, "other-model");
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get("x-ratelimit-limit-requests")).toBe("7");

    // What a change leaves out stays; null clears.
    expect(await (await patch(k.id, { tpm: 5000 })).json()).toMatchObject({ name: "ci runner", rpm: 7, tpm: 5000, stack_ids: [otherStack] });
    expect(await (await patch(k.id, { rpm: null, stacks: null, name: null })).json()).toMatchObject({ name: null, rpm: null, tpm: 5000, stack_ids: null });
    expect((await chat(k.key)).status).toBe(200);

    const { data } = (await (await operator("GET", `/admin/v1/audit?org=${gw.orgId}&action=key.changed`)).json()) as { data: AuditEvent[] };
    expect(data.map((e) => e.detail)).toEqual([{ rpm: null, stack_ids: null, name: null }, { tpm: 5000 }, { name: "ci runner", rpm: 7, stack_ids: [otherStack] }]);
    // A form that sends every field as it was changes nothing, and records nothing.
    expect((await patch(k.id, { name: null, tpm: 5000, rpm: null, stacks: [], machines: null, expires_at: null })).status).toBe(200);
    const again = (await (await operator("GET", `/admin/v1/audit?org=${gw.orgId}&action=key.changed`)).json()) as { data: AuditEvent[] };
    expect(again.data).toHaveLength(3);
  });

  it("stops a key at its expiry, as a revoked one, and says so; extending it brings it back", async () => {
    const k = await create({ name: "short-lived", expires_at: new Date(Date.now() + 60_000).toISOString() });
    expect(k.expires_at).toBeGreaterThan(Date.now());
    expect((await chat(k.key)).status).toBe(200);
    // Its expiry passes (set through the control plane: the API takes only a time to come).
    const soon = Date.now() + 300;
    expect(await (await patch(k.id, { expires_at: soon })).json()).toMatchObject({ expires_at: soon, state: "active" });
    const past = Date.now() - 1;
    // No command makes a key that has expired already: the store, as time would.
    await gw.relay.store.keys.update(k.id, { expiresAt: past });
    const expired = await chat(k.key);
    expect(expired.status).toBe(401);
    expect(await errorOf(expired)).toMatchObject({ code: "invalid_api_key", message: expect.stringContaining(`This key expired at ${new Date(past).toISOString()}`) });
    expect((await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${k.key}` } })).status).toBe(401);
    const listed = (await (await operator("GET", `/admin/v1/keys?org=${gw.orgId}`)).json()) as { data: ApiKey[] };
    expect(listed.data.find((x) => x.id === k.id)?.state).toBe("expired");
    // An expired key can still be renamed; its past expiry sent back as it is (a form sends every field) is no change.
    expect(await (await patch(k.id, { name: "was short-lived", expires_at: past })).json()).toMatchObject({ name: "was short-lived", expires_at: past, state: "expired" });

    expect((await patch(k.id, { expires_at: null })).status).toBe(200);
    expect((await chat(k.key)).status).toBe(200);
  });

  it("regenerates a key: the new secret works at once, the old one for its grace and then not, saying why; its requests stay its own, and it is audited", async () => {
    const k = await create({ name: "rotating", rpm: 50 });
    expect((await chat(k.key)).status).toBe(200);
    const res = await operator("POST", `/admin/v1/keys/${k.id}/regenerate`, { grace_s: 1 });
    expect(res.status).toBe(200);
    const made = (await res.json()) as ApiKey & { key: string };
    expect(made).toMatchObject({ id: k.id, name: "rotating", rpm: 50, state: "active", old_secret_until: expect.any(Number), regenerated_at: expect.any(Number) });
    expect(made.key).not.toBe(k.key);
    expect(made.prefix).toBe(made.key.slice(0, 12));
    expect(made.old_secret_until! - made.regenerated_at!).toBe(1000);
    // Both work within the grace, under the same key and its limit.
    expect((await chat(made.key)).headers.get("x-ratelimit-limit-requests")).toBe("50");
    expect((await chat(k.key)).status).toBe(200);
    // Then the old one stops, its holder told why.
    await expect.poll(async () => (await chat(k.key)).status, { timeout: 5000, interval: 200 }).toBe(401);
    const refused = await chat(k.key);
    expect(await errorOf(refused)).toMatchObject({
      code: "invalid_api_key",
      message: expect.stringMatching(/This key was given a new secret at \d{4}-.+, and this one stopped working at \d{4}-.+; use the new secret\.$/),
    });
    expect((await chat(made.key)).status).toBe(200);
    const log = (await (await operator("GET", `/admin/v1/requests?org=${gw.orgId}&key=${k.id}&status=401`)).json()) as { total: number };
    expect(log.total).toBeGreaterThanOrEqual(2);
    // A grace of 0 stops the old secret now; more than a day is refused, naming the field.
    const again = (await (await operator("POST", `/admin/v1/keys/${k.id}/regenerate`, {})).json()) as ApiKey & { key: string };
    expect((await chat(made.key)).status).toBe(401);
    expect((await chat(again.key)).status).toBe(200);
    const tooLong = await operator("POST", `/admin/v1/keys/${k.id}/regenerate`, { grace_s: 86_401 });
    expect([tooLong.status, (await errorOf(tooLong)).param]).toEqual([400, "grace_s"]);
    const audit = (await (await operator("GET", `/admin/v1/audit?org=${gw.orgId}&action=key.regenerated`)).json()) as { data: AuditEvent[] };
    expect(audit.data.map((e) => [e.target?.id, e.detail?.grace_s])).toEqual([
      [k.id, 0],
      [k.id, 1],
    ]);
    // A revoked key gets no new secret.
    await operator("POST", `/admin/v1/keys/${k.id}/revoke`);
    expect((await operator("POST", `/admin/v1/keys/${k.id}/regenerate`, {})).status).toBe(409);
  });

  it("blocks a key without revoking it: refused, said so and logged as its own until unblocked; admins only, audited", async () => {
    const k = await create({ name: "paused" });
    const blocked = await operator("POST", `/admin/v1/keys/${k.id}/block`);
    expect(await blocked.json()).toMatchObject({ state: "blocked", blocked_at: expect.any(Number) });
    const refused = await chat(k.key);
    expect([refused.status, await errorOf(refused)]).toEqual([401, expect.objectContaining({ code: "invalid_api_key", message: expect.stringContaining("An admin of the organization blocked this key at") })]);
    const listed = (await (await operator("GET", `/admin/v1/keys?org=${gw.orgId}&state=blocked`)).json()) as { data: ApiKey[] };
    expect(listed.data.map((x) => x.id)).toEqual([k.id]);
    const log = (await (await operator("GET", `/admin/v1/requests?org=${gw.orgId}&key=${k.id}`)).json()) as { data: { status: number; key_name: string }[] };
    expect(log.data.map((r) => [r.status, r.key_name])).toEqual([[401, "paused"]]);
    // A member may not unblock it, even their own.
    await operator("POST", "/admin/v1/users", { org: gw.orgId, login: "blocked-member", password: "correct horse battery", role: "member" });
    const member = new WebClient(gw.relay.url);
    expect((await member.signIn("blocked-member", "correct horse battery")).status).toBe(200);
    const denied = await member.call("POST", `/admin/v1/keys/${k.id}/unblock`);
    expect(denied.status).toBe(403);
    expect(await (await operator("POST", `/admin/v1/keys/${k.id}/unblock`)).json()).toMatchObject({ state: "active", blocked_at: null });
    expect((await chat(k.key)).status).toBe(200);
    // Unblocking an unblocked key changes nothing and records nothing.
    await operator("POST", `/admin/v1/keys/${k.id}/unblock`);
    const audit = (await (await operator("GET", `/admin/v1/audit?org=${gw.orgId}&action=key`)).json()) as { data: AuditEvent[] };
    expect(audit.data.filter((e) => e.target?.id === k.id).map((e) => e.action)).toEqual(["key.unblocked", "key.blocked", "key.created"]);
  });

  it("refuses bad changes with the parameter named, and changes nothing", async () => {
    const k = await create({ name: "steady", rpm: 3 });
    const cases: [unknown, number, string, string][] = [
      [{ expires_at: Date.now() - 1000 }, 400, "invalid_value", "expires_at"],
      [{ expires_at: "next tuesday" }, 400, "invalid_value", "expires_at"],
      [{ rpm: 0 }, 400, "invalid_value", "rpm"],
      [{ tpm: "lots" }, 400, "invalid_value", "tpm"],
      [{ name: "" }, 400, "missing_required_parameter", "name"],
      [{ stacks: "all" }, 400, "invalid_value", "stacks"],
      [{ stacks: ["stk_nope"] }, 404, "not_found", "stacks"],
      [{ machines: ["mach_nope"] }, 404, "not_found", "machine"],
    ];
    for (const [body, status, code, param] of cases) {
      const res = await patch(k.id, body);
      expect([body, res.status, await errorOf(res)]).toEqual([body, status, expect.objectContaining({ code, param })]);
    }
    expect(await gw.relay.control.keys.get(OP, k.id)).toMatchObject({ name: "steady", rpm: 3, stackIds: null, machineIds: null, expiresAt: null });
    expect((await patch("key_nope", { name: "x" })).status).toBe(404);
    await operator("POST", `/admin/v1/keys/${k.id}/revoke`);
    const revoked = await patch(k.id, { name: "again" });
    expect([revoked.status, (await errorOf(revoked)).code]).toEqual([409, "conflict"]);
  });

  it("lets a member change only its own keys, and never past the organization's default limits", async () => {
    await operator("POST", "/admin/v1/users", { org: gw.orgId, login: "kim", password: "correct horse battery", role: "member" });
    const member = new WebClient(gw.relay.url);
    expect((await member.signIn("kim", "correct horse battery")).status).toBe(200);
    await operator("PATCH", `/admin/v1/orgs/${gw.orgId}`, { default_key_rpm: 100 });
    try {
      const own = await member.json<ApiKey>("POST", "/admin/v1/keys", { name: "kim's" });
      const theirs = await create({ name: "not kim's" });
      const denied = await member.call("PATCH", `/admin/v1/keys/${theirs.id}`, { name: "mine now" });
      expect([denied.status, (await errorOf(denied)).message]).toEqual([403, "Members can change only the keys they created."]);
      const greedy = await member.call("PATCH", `/admin/v1/keys/${own.id}`, { rpm: 1000 });
      expect([greedy.status, (await errorOf(greedy)).param]).toEqual([403, "rpm"]);
      expect(await member.json("PATCH", `/admin/v1/keys/${own.id}`, { rpm: 50, name: "kim's ci" })).toMatchObject({ rpm: 50, name: "kim's ci" });
    } finally {
      await operator("PATCH", `/admin/v1/orgs/${gw.orgId}`, { default_key_rpm: null });
    }
  });
});
