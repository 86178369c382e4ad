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
