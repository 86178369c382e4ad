import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { ApiKeyWithUsage, Choices, Machine, Page, Stack, User } from "../../relay/admin-contract/index.js";
import { WebClient } from "../helpers/web-client.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";

// Lists that scale (issue 21, point 4): every list endpoint searches, sorts, filters by state and pages on the relay,
// answering {data, total, page, per_page}, so a browser never gets 10,000 rows.
describe("paged admin lists", () => {
  let gw: TestGateway;
  const get = async <T>(path: string) => {
    const res = await fetch(`${gw.relay.url}${path}`, { headers: { authorization: `Bearer ${gw.relay.adminToken}` } });
    return { status: res.status, body: (await res.json()) as Page<T> & { error: { code: string; param: string; message: string } } };
  };
  const keys = (query: string) => get<ApiKeyWithUsage>(`/admin/v1/keys?org=${gw.orgId}&${query}`);

  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake" });
    // 123 keys besides the gateway's own "test": ci-000 … ci-119, and three named for search.
    for (let i = 0; i < 120; i++) await gw.relay.control.keys.create(OP, gw.orgId, { name: `ci-${String(i).padStart(3, "0")}` });
    for (const name of ["Billing bot", "billing cron", "Support desk"]) await gw.relay.control.keys.create(OP, gw.orgId, { name });
    const revoked = await gw.relay.control.keys.create(OP, gw.orgId, { name: "old billing" });
    await gw.relay.control.keys.revoke(OP, revoked.record.id);
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("pages keys: 100 by default, the total of all, any page size up to 1,000", async () => {
    const first = await keys("");
    expect(first.status).toBe(200);
    expect([first.body.object, first.body.data.length, first.body.total, first.body.page, first.body.per_page]).toEqual(["list", 100, 125, 1, 100]);
    const last = await keys("per_page=50&page=3");
    expect([last.body.data.length, last.body.total, last.body.page]).toEqual([25, 125, 3]);
    // Pages cover the list once each, in the list's own order.
    const pages = await Promise.all([1, 2, 3].map((p) => keys(`per_page=50&page=${p}`)));
    const ids = pages.flatMap((p) => p.body.data.map((k) => k.id));
    expect(new Set(ids).size).toBe(125);
    expect(ids).toEqual((await keys("per_page=1000")).body.data.map((k) => k.id));
    expect((await keys("page=9")).body).toMatchObject({ data: [], total: 125, page: 9 });
  });

  it("searches every word, in any case, in names, prefixes and ids; filters by state", async () => {
    const billing = await keys("q=BILLING");
    expect(billing.body.data.map((k) => k.name).sort()).toEqual(["Billing bot", "billing cron", "old billing"]);
    expect((await keys("q=billing%20bot")).body.data.map((k) => k.name)).toEqual(["Billing bot"]);
    expect((await keys("q=billing&state=active")).body).toMatchObject({ total: 2 });
    expect((await keys("state=revoked")).body.data.map((k) => k.name)).toEqual(["old billing"]);
    const one = billing.body.data[0]!;
    expect((await keys(`q=${one.prefix}`)).body.data.map((k) => k.id)).toContain(one.id);
    expect((await keys("q=nothing-like-this")).body).toMatchObject({ data: [], total: 0 });
  });

  it("sorts by a column either way, whatever the case of the names", async () => {
    const asc = (await keys("sort=name&order=asc&per_page=1000")).body.data.map((k) => k.name);
    expect(asc.slice(0, 3)).toEqual(["Billing bot", "billing cron", "ci-000"]);
    expect(asc.at(-1)).toBe("test");
    const desc = (await keys("sort=name&order=desc&per_page=3")).body.data.map((k) => k.name);
    expect(desc).toEqual(["test", "Support desk", "old billing"]);
    const byAge = (await keys("sort=created_at&order=desc&per_page=1000")).body.data.map((k) => k.created_at);
    expect(byAge).toEqual([...byAge].sort((a, b) => b - a));
    expect(byAge[0]).toBeGreaterThan(byAge.at(-1)!);
  });

  it("refuses what it cannot do, saying which parameter", async () => {
    for (const [query, param] of [
      ["sort=key_hash", "sort"],
      ["order=sideways", "order"],
      ["state=deleted", "state"],
      ["page=0", "page"],
      ["per_page=1001", "per_page"],
      ["per_page=ten", "per_page"],
      [`q=${"x".repeat(201)}`, "q"],
    ] as const) {
      const res = await keys(query);
      expect([query, res.status, res.body.error.code, res.body.error.param]).toEqual([query, 400, "invalid_value", param]);
    }
  });

  it("pages machines, stacks and people the same way", async () => {
    const { machineId } = await gw.addMachine(gw.orgId);
    await gw.addStack({ orgId: gw.orgId, machineId, modelId: "second-model", deploy: false });
    const machines = await get<Machine>(`/admin/v1/machines?org=${gw.orgId}&sort=name&order=desc&per_page=1`);
    expect(machines.body).toMatchObject({ total: 2, per_page: 1 });
    expect((await get<Machine>(`/admin/v1/machines?org=${gw.orgId}&state=online&q=${machineId}`)).body.data.map((m) => m.id)).toEqual([machineId]);
    const stacks = await get<Stack>(`/admin/v1/stacks?org=${gw.orgId}&machine=${machineId}`);
    expect([stacks.body.total, stacks.body.data.map((s) => s.model_id)]).toEqual([1, ["second-model"]]);
    expect((await get<Stack>(`/admin/v1/stacks?org=${gw.orgId}&state=draft`)).body.data.map((s) => s.model_id)).toEqual(["second-model"]);
    expect((await get<Stack>(`/admin/v1/stacks?org=${gw.orgId}&q=SECOND`)).body.total).toBe(1);
    await gw.relay.control.users.create(OP, { org: gw.orgId,  login: "zed@acme.test", password: "correct horse battery", role: "member" });
    const users = await get<User>(`/admin/v1/users?org=${gw.orgId}&sort=login&order=desc`);
    expect(users.body.data[0]!.login).toBe("zed@acme.test");
    expect((await get<User>(`/admin/v1/users?org=${gw.orgId}&state=disabled`)).body.total).toBe(0);
  });

  it("names every stack and machine in one light answer for forms and filters; works out a page of stacks' compatibility and deployment for that page only", async () => {
    const { machine } = await gw.relay.control.machines.create(OP, { org: gw.orgId, name: "spare" });
    await gw.relay.control.machines.revoke(OP, machine.id);
    const res = await fetch(`${gw.relay.url}/admin/v1/choices?org=${gw.orgId}`, { headers: { authorization: `Bearer ${gw.relay.adminToken}` } });
    const choices = (await res.json()) as Choices;
    const stacks = await gw.relay.control.stacks.records(OP, gw.orgId);
    expect(choices.stacks).toEqual(stacks.map((s) => ({ id: s.id, name: s.name, model_id: s.modelId, machine_id: s.machineId, runtime: s.runtime, state: s.state })));
    expect(choices.machines.find((m) => m.id === machine.id)).toEqual({ id: machine.id, name: "spare", state: "pending", revoked: true });
    expect(choices.machines.find((m) => m.id === gw.machineId)).toMatchObject({ state: "online", revoked: false });
    // Light: no compatibility, deployment or hardware in it.
    expect(Object.keys(choices.stacks[0]!).sort()).toEqual(["id", "machine_id", "model_id", "name", "runtime", "state"]);
    // A member of the organization sees them; another organization's, nobody but the operator.
    const other = await gw.relay.control.orgs.create(OP, { name: "Elsewhere" });
    const member = await gw.relay.control.users.create(OP, { org: gw.orgId,  login: "picker@acme.test", password: "correct horse battery", role: "member" });
    const web = new WebClient(gw.relay.url);
    await web.signIn(member.login, "correct horse battery");
    expect((await web.json<Choices>("GET", "/admin/v1/choices")).stacks.length).toBe(stacks.length);
    expect((await web.call("GET", `/admin/v1/choices?org=${other.id}`)).status).toBe(404);
    // A page of stacks carries each one's compatibility and deployment, worked out for that page's stacks only.
    const views = vi.spyOn(gw.relay.control.stacks, "viewsOf");
    const page = await get<Stack>(`/admin/v1/stacks?org=${gw.orgId}&sort=name&per_page=1&page=2`);
    expect(page.body.data[0]).toMatchObject({ compatibility: { checks: expect.any(Array) }, deployment: expect.anything() });
    expect(views.mock.calls.map(([stacks]) => stacks.map((s) => s.id))).toEqual([[page.body.data[0]!.id]]);
    views.mockRestore();
  });
});
