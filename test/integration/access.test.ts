import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";

/** What a client sees for a chat request: status and error code (or "ok"). */
async function attempt(gw: TestGateway, key: string, model: string): Promise<[number, string]> {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "Hi" }], max_tokens: 1 }),
  });
  const body = (await res.json()) as { error?: { code: string; message: string } };
  return [res.status, body.error?.code ?? "ok"];
}

describe("who can reach which model", () => {
  let gw: TestGateway;
  let otherOrg: string;
  let secondMachine: string;
  let otherOrgKey: string;
  const stacks: Record<string, string> = {};

  beforeAll(async () => {
    gw = await startTestGateway();
    secondMachine = (await gw.addMachine(gw.orgId)).machineId;
    stacks.second = await gw.addStack({ orgId: gw.orgId, machineId: secondMachine, modelId: "second" });
    stacks.headless = await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: "headless", endpoint: false });
    stacks.draft = await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: "draft-only", deploy: false });
    otherOrg = (await gw.relay.control.orgs.create(OP, { name: "Other Org" })).id;
    const otherMachine = (await gw.addMachine(otherOrg)).machineId;
    stacks.secret = await gw.addStack({ orgId: otherOrg, machineId: otherMachine, modelId: "secret-model" });
    otherOrgKey = (await gw.relay.control.keys.create(OP, otherOrg, {})).key;
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("lists every deployed model with an Endpoint layer of the key's organization, once each", async () => {
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
    expect((await client.models.list()).data.map((m) => m.id).sort()).toEqual(["second", "stories"]);
  });

  it("neither lists nor reaches a stack without an Endpoint layer, or not deployed", async () => {
    expect(await attempt(gw, gw.apiKey, "headless")).toEqual([404, "model_not_found"]);
    expect(await attempt(gw, gw.apiKey, "draft-only")).toEqual([404, "model_not_found"]);
  });

  it("answers 403 for a model of the organization that the key's stack restriction excludes", async () => {
    const { key } = await gw.relay.control.keys.create(OP, gw.orgId, { stackIds: [gw.stackId] });
    expect(await attempt(gw, key, "stories")).toEqual([200, "ok"]);
    expect(await attempt(gw, key, "second")).toEqual([403, "model_access_denied"]);
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: key, maxRetries: 0 });
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(["stories"]);
    const err = await client.chat.completions.create({ model: "second", messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((err as InstanceType<typeof OpenAI.PermissionDeniedError>).param).toBe("model");
  });

  it("answers 403 for a model on a machine the key's machine restriction excludes", async () => {
    const { key } = await gw.relay.control.keys.create(OP, gw.orgId, { machineIds: [secondMachine] });
    expect(await attempt(gw, key, "second")).toEqual([200, "ok"]);
    expect(await attempt(gw, key, "stories")).toEqual([403, "model_access_denied"]);
  });

  it("makes another organization's model indistinguishable from one that does not exist", async () => {
    const foreign = await attempt(gw, gw.apiKey, "secret-model");
    const unknown = await attempt(gw, gw.apiKey, "no-such-model");
    expect(foreign).toEqual([404, "model_not_found"]);
    expect(unknown).toEqual(foreign);
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: otherOrgKey, maxRetries: 0 });
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(["secret-model"]);
    expect(await attempt(gw, otherOrgKey, "stories")).toEqual([404, "model_not_found"]);
    expect(await attempt(gw, otherOrgKey, "secret-model")).toEqual([200, "ok"]);
  });

  it("refuses to restrict a key to another organization's stack or machine", async () => {
    await expect(gw.relay.control.keys.create(OP, gw.orgId, { stackIds: [stacks.secret!] })).rejects.toThrow(/No stack/);
  });

  it("revokes a key for every request after the revoke, even with 50 requests in flight", async () => {
    const { key, record } = await gw.relay.control.keys.create(OP, gw.orgId, {});
    const inFlight = Array.from({ length: 50 }, () => attempt(gw, key, "stories"));
    // Revoke once the first answer is back: the other requests are still on their way.
    expect(await Promise.race(inFlight)).toEqual([200, "ok"]);
    await gw.relay.control.keys.revoke(OP, record.id);
    const settled = await Promise.all(inFlight);
    // Each racing request is either served (authenticated before the revoke) or refused cleanly, never anything else.
    for (const r of settled) expect([[200, "ok"], [401, "invalid_api_key"]]).toContainEqual(r);
    const after = await Promise.all(Array.from({ length: 20 }, () => attempt(gw, key, "stories")));
    expect(after.every(([s, c]) => s === 401 && c === "invalid_api_key")).toBe(true);
  });
});
