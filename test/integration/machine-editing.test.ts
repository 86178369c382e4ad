import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditEvent, Machine } from "../../relay/admin-contract/index.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { WebClient } from "../helpers/web-client.js";

// Machines are renamed, and deleted once they never joined or were revoked (issue 21, point 3).
describe("renaming and deleting machines", () => {
  let gw: TestGateway;
  const operator = (method: string, path: string, body?: unknown) =>
    fetch(`${gw.relay.url}${path}`, { method, headers: { authorization: `Bearer ${gw.relay.adminToken}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  const errorOf = async (res: Response) => ((await res.json()) as { error: { code: string; param: string | null; message: string } }).error;
  const machines = async () => ((await (await operator("GET", `/admin/v1/machines?org=${gw.orgId}`)).json()) as { data: Machine[] }).data;

  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("renames a machine, keeping it online and serving; a bad name changes nothing", async () => {
    const res = await operator("PATCH", `/admin/v1/machines/${gw.machineId}`, { name: "rack-2 gpu" });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: gw.machineId, name: "rack-2 gpu", state: "online" });
    expect((await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${gw.apiKey}` } })).status).toBe(200);
    for (const name of ["", "x".repeat(101), "bad\u202ename"]) {
      const refused = await operator("PATCH", `/admin/v1/machines/${gw.machineId}`, { name });
      expect([refused.status, (await errorOf(refused)).param]).toEqual([400, "name"]);
    }
    expect((await machines()).find((m) => m.id === gw.machineId)?.name).toBe("rack-2 gpu");
    const { data } = (await (await operator("GET", `/admin/v1/audit?org=${gw.orgId}&action=machine.renamed`)).json()) as { data: AuditEvent[] };
    expect(data.map((e) => [e.target?.name, e.detail])).toEqual([["rack-2 gpu", { from: expect.any(String) }]]);
  });

  it("deletes a machine that never joined, and its token can never join", async () => {
    const created = (await (await operator("POST", "/admin/v1/machines", { org: gw.orgId, name: "never-came" })).json()) as Machine & { token: string };
    const res = await operator("DELETE", `/admin/v1/machines/${created.id}`);
    expect([res.status, await res.json()]).toEqual([200, { id: created.id, deleted: true }]);
    expect((await machines()).map((m) => m.id)).not.toContain(created.id);
    expect((await operator("GET", `/admin/v1/machines/${created.id}`)).status).toBe(404);
    expect(await gw.relay.control.machines.checkToken(created.id, created.token)).toMatchObject({ refusal: expect.any(String) });
    expect((await operator("DELETE", `/admin/v1/machines/${created.id}`)).status).toBe(404);
  });

  it("refuses to delete a machine that joined and is not revoked, or that stacks still name, saying what to do first", async () => {
    const joined = await operator("DELETE", `/admin/v1/machines/${gw.machineId}`);
    expect([joined.status, (await errorOf(joined)).message]).toEqual([409, expect.stringContaining("revoke it first")]);
    const { machineId } = await gw.addMachine(gw.orgId);
    await gw.addStack({ orgId: gw.orgId, machineId, modelId: "on-doomed", deploy: false });
    await operator("POST", `/admin/v1/machines/${machineId}/revoke`);
    const named = await operator("DELETE", `/admin/v1/machines/${machineId}`);
    expect([named.status, (await errorOf(named)).message]).toEqual([409, expect.stringContaining("delete them first")]);
    expect((await machines()).map((m) => m.id)).toContain(machineId);
  });

  it("lets only admins rename or delete", async () => {
    await operator("POST", "/admin/v1/users", { org: gw.orgId, login: "mo", password: "correct horse battery", role: "member" });
    const member = new WebClient(gw.relay.url);
    expect((await member.signIn("mo", "correct horse battery")).status).toBe(200);
    const created = (await (await operator("POST", "/admin/v1/machines", { org: gw.orgId, name: "spare" })).json()) as Machine;
    expect((await member.call("PATCH", `/admin/v1/machines/${created.id}`, { name: "mine" })).status).toBe(403);
    expect((await member.call("DELETE", `/admin/v1/machines/${created.id}`)).status).toBe(403);
    expect((await machines()).find((m) => m.id === created.id)?.name).toBe("spare");
  });
});
