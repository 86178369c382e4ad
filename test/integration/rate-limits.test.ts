import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";

describe("per-key rate limits at the gateway", () => {
  let gw: TestGateway;
  const chat = (key: string, body: Record<string, unknown> = {}) =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: "Hi" }], max_tokens: 1, ...body }),
    });

  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("lets exactly 10 of 100 parallel requests through a 10 rpm key; the rest get 429 requests with Retry-After", async () => {
    const { key } = await gw.relay.control.keys.create(OP, gw.orgId, { rpm: 10 });
    const responses = await Promise.all(Array.from({ length: 100 }, () => chat(key)));
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(90);
    const refused = responses.find((r) => r.status === 429)!;
    expect(await refused.json()).toEqual({ error: { message: expect.stringContaining("requests per minute"), type: "requests", param: null, code: "rate_limit_exceeded" } });
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(Number(refused.headers.get("retry-after-ms"))).toBeGreaterThan(0);
    expect(refused.headers.get("x-ratelimit-limit-requests")).toBe("10");
    expect(refused.headers.get("x-ratelimit-remaining-requests")).toBe("0");
    expect(refused.headers.get("x-ratelimit-reset-requests")).toMatch(/^\d+(\.\d+)?(ms|s)$|^\d+m\d+s$/);
    await Promise.all(responses.filter((r) => !r.bodyUsed).map((r) => r.body?.cancel()));
  });

  it("gives keys that set no limit of their own the organization's default limits, from the next request", async () => {
    const patch = (body: unknown) =>
      fetch(`${gw.relay.url}/admin/v1/orgs/${gw.orgId}`, { method: "PATCH", headers: { authorization: `Bearer ${gw.relay.adminToken}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    const { key: plain } = await gw.relay.control.keys.create(OP, gw.orgId, {});
    const { key: own } = await gw.relay.control.keys.create(OP, gw.orgId, { rpm: 7 });
    const limits = async (key: string) => {
      const res = await chat(key);
      await res.body?.cancel();
      return [res.status, res.headers.get("x-ratelimit-limit-requests"), res.headers.get("x-ratelimit-limit-tokens")];
    };
    expect(await limits(plain)).toEqual([200, null, null]);

    const set = await patch({ default_key_rpm: 3, default_key_tpm: 5000 });
    expect([set.status, await set.json()]).toEqual([200, expect.objectContaining({ id: gw.orgId, default_key_rpm: 3, default_key_tpm: 5000 })]);
    expect(await limits(plain)).toEqual([200, "3", "5000"]);
    // A key's own limit stands; what it leaves open takes the default.
    expect(await limits(own)).toEqual([200, "7", "5000"]);
    expect(await limits(plain)).toEqual([200, "3", "5000"]);
    expect(await limits(plain)).toEqual([200, "3", "5000"]);
    expect((await limits(plain))[0]).toBe(429); // the fourth within the minute

    const refused = await patch({ default_key_rpm: 0 });
    expect([refused.status, ((await refused.json()) as { error: { param: string } }).error.param]).toEqual([400, "default_key_rpm"]);
    const cleared = await patch({ default_key_rpm: null, default_key_tpm: null });
    expect(cleared.status).toBe(200);
    expect(await limits(plain)).toEqual([200, null, null]);
  });

  it("keeps both of two changes to an organization's default limits made at once, one to rpm and one to tpm", async () => {
    const patch = (body: unknown) =>
      fetch(`${gw.relay.url}/admin/v1/orgs/${gw.orgId}`, { method: "PATCH", headers: { authorization: `Bearer ${gw.relay.adminToken}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    // Neither writes before both have come to their write: each saw the organization as it was before either
    // wrote (as two relays, or a slow database, would have them), so a command writing back the whole record it
    // saw would lose one of the changes.
    const orgs = gw.relay.store.orgs;
    const set = orgs.setDefaultKeyLimits.bind(orgs);
    let arrived = 0;
    let release!: () => void;
    const both = new Promise<void>((resolve) => (release = resolve));
    orgs.setDefaultKeyLimits = async (...args) => {
      if (++arrived === 2) release();
      await both;
      return set(...args);
    };
    try {
      const answers = await Promise.all([patch({ default_key_rpm: 11 }), patch({ default_key_tpm: 2222 })]);
      expect(answers.map((r) => r.status)).toEqual([200, 200]);
    } finally {
      orgs.setDefaultKeyLimits = set;
    }
    const org = (await gw.relay.store.orgs.find(gw.orgId))!;
    expect([org.defaultKeyRpm, org.defaultKeyTpm]).toEqual([11, 2222]);
    expect((await patch({ default_key_rpm: null, default_key_tpm: null })).status).toBe(200);
  });

  it("reports the organization's default limits on /v1/models as on chat, for a key that inherits them", async () => {
    const patch = (body: unknown) =>
      fetch(`${gw.relay.url}/admin/v1/orgs/${gw.orgId}`, { method: "PATCH", headers: { authorization: `Bearer ${gw.relay.adminToken}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    const { key } = await gw.relay.control.keys.create(OP, gw.orgId, {});
    const limits = (res: Response) => [res.status, res.headers.get("x-ratelimit-limit-requests"), res.headers.get("x-ratelimit-limit-tokens")];
    expect((await patch({ default_key_rpm: 40, default_key_tpm: 6000 })).status).toBe(200);
    try {
      const models = await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${key}` } });
      expect(limits(models)).toEqual([200, "40", "6000"]);
      const answered = await chat(key);
      await answered.body?.cancel();
      expect(limits(answered)).toEqual([200, "40", "6000"]);
    } finally {
      expect((await patch({ default_key_rpm: null, default_key_tpm: null })).status).toBe(200);
    }
  });

  it("reports the limits on every response of a limited key, and none for an unlimited one", async () => {
    const { key } = await gw.relay.control.keys.create(OP, gw.orgId, { rpm: 5, tpm: 10_000 });
    const models = await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${key}` } });
    expect(Object.fromEntries([...models.headers].filter(([h]) => h.startsWith("x-ratelimit-")))).toEqual({
      "x-ratelimit-limit-requests": "5",
      "x-ratelimit-remaining-requests": "5",
      "x-ratelimit-reset-requests": "0ms",
      "x-ratelimit-limit-tokens": "10000",
      "x-ratelimit-remaining-tokens": "10000",
      "x-ratelimit-reset-tokens": "0ms",
    });
    const notFound = await chat(key, { model: "nope" });
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get("x-ratelimit-remaining-requests")).toBe("5");
    const unlimited = await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${gw.apiKey}` } });
    expect([...unlimited.headers.keys()].some((h) => h.startsWith("x-ratelimit-"))).toBe(false);
  });

  it("charges nothing for refused requests (400, 404, context too long)", async () => {
    const { key } = await gw.relay.control.keys.create(OP, gw.orgId, { rpm: 2, tpm: 1000 });
    expect((await chat(key, { temperature: 9 })).status).toBe(400);
    expect((await chat(key, { model: "nope" })).status).toBe(404);
    expect((await chat(key, { max_tokens: 900 })).status).toBe(400);
    expect((await chat(key, { messages: [{ role: "user", content: "word ".repeat(600) }], max_tokens: 1 })).status).toBe(400);
    expect((await chat(key)).status).toBe(200);
    expect((await chat(key)).status).toBe(200);
    expect((await chat(key)).status).toBe(429);
  });

  it("limits a key's refused requests apart from its quota: past 60 a minute they answer 429, and its quota is untouched", async () => {
    const { key } = await gw.relay.control.keys.create(OP, gw.orgId, { rpm: 5 });
    const statuses: number[] = [];
    for (let i = 0; i < 61; i++) statuses.push((await chat(key, { model: `made-up-${i}` })).status);
    expect(statuses.slice(0, 60).every((s) => s === 404)).toBe(true);
    const turnedAway = await chat(key);
    expect(turnedAway.status).toBe(429);
    expect(turnedAway.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(turnedAway.headers.get("x-ratelimit-remaining-requests")).toBe("5");
    expect(((await turnedAway.json()) as { error: { message: string } }).error.message).toContain("Too many refused requests");
    expect(statuses[60]).toBe(429);
    // Another key of the same organization is not slowed by it.
    const { key: other } = await gw.relay.control.keys.create(OP, gw.orgId, { rpm: 5 });
    expect((await chat(other)).status).toBe(200);
  });

  it("admits on the estimate, settles to real usage, and refuses with 429 tokens when the estimate does not fit", async () => {
    const { key } = await gw.relay.control.keys.create(OP, gw.orgId, { tpm: 300 });
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: key, maxRetries: 0 });
    const { data, response } = await client.chat.completions.create({ model: gw.modelId, messages: [{ role: "user", content: "Hi" }], max_tokens: 5, temperature: 0 }).withResponse();
    const used = data.usage!.total_tokens;
    // The headers of this response were set at admission (estimate); the next response shows the settled usage.
    expect(Number(response.headers.get("x-ratelimit-remaining-tokens"))).toBeLessThan(300);
    const after = await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${key}` } });
    expect(Number(after.headers.get("x-ratelimit-remaining-tokens"))).toBe(300 - used);

    const err = await client.chat.completions.create({ model: gw.modelId, messages: [{ role: "user", content: "Hi" }], max_tokens: 290 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect((err as InstanceType<typeof OpenAI.RateLimitError>).type).toBe("tokens");
    expect((err as InstanceType<typeof OpenAI.RateLimitError>).code).toBe("rate_limit_exceeded");
  });
});
