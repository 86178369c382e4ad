import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LogPage } from "../../relay/admin-contract/index.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { WebClient } from "../helpers/web-client.js";

// Logs on the page (issue 43, point 5): the relay reads a machine's log over its link, the agent's own lines and a
// stack's (its runtime's process output, and the agent's lines about it), real agent, real gRPC, real GGUF model.
describe("a machine's log and its stacks', read over the link", () => {
  let gw: TestGateway;
  const operator = (path: string) => fetch(`${gw.relay.url}/admin/v1${path}`, { headers: { authorization: `Bearer ${gw.relay.adminToken}` } });
  const read = async (path: string) => {
    const res = await operator(path);
    expect(res.status, await res.clone().text()).toBe(200);
    return (await res.json()) as LogPage;
  };

  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("gives the agent's lines and a stack's runtime's, newest after the last read, to admins only", async () => {
    const machine = await read(`/machines/${gw.machineId}/log`);
    expect(machine.object).toBe("log");
    expect(machine.lines.length).toBeGreaterThan(0);
    expect(machine.lines.every((l, i) => i === 0 || l.seq > machine.lines[i - 1]!.seq)).toBe(true);
    expect(machine.lines.every((l) => ["info", "warn", "error", "output"].includes(l.level) && l.at > 0)).toBe(true);
    expect(machine.next).toBe(machine.lines.at(-1)!.seq);
    // Its stack's: what the model process said as it loaded, and the agent's lines about the stack.
    const stack = await read(`/stacks/${gw.stackId}/log`);
    expect(stack.lines.some((l) => l.level === "output" && /^gguf-server: loaded .+\.gguf: \d+ tokens of context/.test(l.text))).toBe(true);
    expect(stack.lines.some((l) => l.text.includes("endpoint configured"))).toBe(true);
    // Nothing of the machine token or the key's secret, whatever the agent logged.
    expect(JSON.stringify([machine, stack])).not.toMatch(/mk_(mach|live)_[A-Za-z0-9]{8,}/);
    // The lines after the last read: none yet, then the ones a new event wrote.
    expect((await read(`/stacks/${gw.stackId}/log?after=${stack.next}`)).lines).toEqual([]);
    const few = await read(`/machines/${gw.machineId}/log?limit=2`);
    expect(few.lines.map((l) => l.seq)).toEqual(machine.lines.slice(0, 2).map((l) => l.seq));

    // Bad input in the documented shape; a member is refused; a machine not linked says so.
    const bad = await operator(`/machines/${gw.machineId}/log?limit=500`);
    expect([bad.status, ((await bad.json()) as { error: { param: string } }).error.param]).toEqual([400, "limit"]);
    await fetch(`${gw.relay.url}/admin/v1/users`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.relay.adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({ org: gw.orgId, login: "reader@example.com", role: "member", password: "reader-password-1" }),
    });
    const member = new WebClient(gw.relay.url);
    expect((await member.signIn("reader@example.com", "reader-password-1")).status).toBe(200);
    expect((await member.call("GET", `/admin/v1/stacks/${gw.stackId}/log`)).status).toBe(403);
    await gw.agent.stop();
    try {
      await expect.poll(async () => (await operator(`/machines/${gw.machineId}/log`)).status, { timeout: 10_000 }).toBe(503);
      const offline = await operator(`/stacks/${gw.stackId}/log`);
      expect(((await offline.json()) as { error: { code: string } }).error.code).toBe("machine_offline");
    } finally {
      await gw.restartAgent();
    }
  });
});
