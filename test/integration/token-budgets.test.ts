import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { WebClient } from "../helpers/web-client.js";
import { adminApi } from "../helpers/admin-api.js";

/**
 * Token budgets of keys and organizations through the whole gateway: the real GGUF test model answers, the
 * admin API sets the budgets and says what each has spent, and the answers carry what is left.
 */
describe("token budgets", () => {
  let gw: TestGateway;
  const admin = adminApi(() => gw.relay);
  type Key = { id: string; key: string; budget: { tokens: number; period: string } | null; budget_spent: number | null };
  const newKey = async (budget: unknown) => (await admin<Key>("POST", "/keys", { org: gw.orgId, name: "budgeted", budget })).body;
  const keyOf = async (id: string) => (await admin<{ data: Key[] }>("GET", `/keys?org=${gw.orgId}&per_page=100`)).body.data.find((k) => k.id === id)!;
  const chat = (apiKey: string, body: Record<string, unknown>) =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content: "Once upon a time" }], temperature: 0, ...body }),
    });

  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("says what is left on every answer, charges what a request used, holds a request to what is left, and refuses past it until the period's end", async () => {
    const key = await newKey({ tokens: 400, period: "day" });
    expect([key.budget, key.budget_spent]).toEqual([{ tokens: 400, period: "day" }, 0]);
    const first = await chat(key.key, { max_tokens: 5 });
    expect(first.status).toBe(200);
    const answer = (await first.json()) as { usage: { total_tokens: number } };
    // Its reservation: the prompt's estimate and its max_tokens; what it used is charged once it ends.
    const left = Number(first.headers.get("x-budget-remaining-tokens"));
    expect(left).toBeLessThan(400 - 5);
    expect((await keyOf(key.id)).budget_spent).toBe(answer.usage.total_tokens);

    // No max_tokens, less left than its context: its completion is held to what is left after its prompt (as estimated).
    const spentBefore = answer.usage.total_tokens;
    const held = await chat(key.key, {});
    expect(held.status).toBe(200);
    const heldAnswer = (await held.json()) as { usage: { total_tokens: number; completion_tokens: number }; choices: { finish_reason: string }[] };
    expect(heldAnswer.choices[0]!.finish_reason).toBe("length");
    expect(heldAnswer.usage.completion_tokens).toBeLessThan(400 - spentBefore);
    // Charged what it used: its completion, and its prompt as the runtime counted it (the template's tokens too).
    const spent = (await keyOf(key.id)).budget_spent!;
    expect(spent).toBe(spentBefore + heldAnswer.usage.total_tokens);

    // Past it: 429 budget_exceeded, in the API's error shape, with the period's end in Retry-After.
    const refused = await chat(key.key, { max_tokens: 5 });
    expect(refused.status).toBe(429);
    const midnight = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate() + 1);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(Math.floor((midnight - Date.now()) / 1000) - 5);
    expect(Number(refused.headers.get("retry-after"))).toBeLessThanOrEqual(Math.ceil((midnight - Date.now()) / 1000) + 1);
    expect(refused.headers.get("x-budget-remaining-tokens")).toBe(String(Math.max(0, 400 - spent)));
    expect(((await refused.json()) as { error: unknown }).error).toEqual({
      message: expect.stringMatching(/^This key's token budget for today is exceeded: .* It renews at \d{4}-\d\d-\d\dT00:00:00\.000Z\.$/),
      type: "insufficient_quota",
      param: null,
      code: "budget_exceeded",
    });
    const messages = await fetch(`${gw.baseURL}/messages`, {
      method: "POST",
      headers: { "x-api-key": key.key, "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: gw.modelId, max_tokens: 5, messages: [{ role: "user", content: "Once" }] }),
    });
    expect(messages.status).toBe(429);
    expect(((await messages.json()) as { error: { type: string } }).error.type).toBe("rate_limit_error");

    // A bigger budget holds from the next request on.
    expect((await admin("PATCH", `/keys/${key.id}`, { budget: { tokens: 100_000, period: "day" } })).status).toBe(200);
    const again = await chat(key.key, { max_tokens: 5 });
    expect(again.status).toBe(200);
    expect(Number(again.headers.get("x-budget-remaining-tokens"))).toBeGreaterThan(99_000);
    // Removed: no budget, no header.
    await admin("PATCH", `/keys/${key.id}`, { budget: null });
    const free = await chat(key.key, { max_tokens: 2 });
    expect([free.status, free.headers.get("x-budget-remaining-tokens")]).toEqual([200, null]);
  });

  it("charges a long stream what it used, giving back the rest of what it reserved, and never lets a prompt reserve less than it can use", async () => {
    const key = await newKey({ tokens: 10_000, period: "month" });
    // Digits and spaces: about a token a character, where the rate limits' estimate counts one per four. Its
    // reservation is a bound the prompt cannot pass (a token is at least a byte), so many such requests at once
    // cannot overspend the budget.
    const content = Array.from({ length: 120 }, (_, i) => String(i % 10)).join(" ");
    const res = await chat(key.key, { max_tokens: 64, stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content }] });
    expect(res.status).toBe(200);
    const reserved = 10_000 - Number(res.headers.get("x-budget-remaining-tokens"));
    const text = await res.text();
    const usage = text
      .split("\n")
      .filter((l) => l.startsWith("data: {"))
      .map((l) => JSON.parse(l.slice(6)) as { usage?: { total_tokens: number; prompt_tokens: number } })
      .find((c) => c.usage)!.usage!;
    expect(usage.prompt_tokens).toBeGreaterThan(Math.ceil(content.length / 4) + 4);
    expect(reserved).toBeGreaterThanOrEqual(usage.total_tokens);
    expect((await keyOf(key.id)).budget_spent).toBe(usage.total_tokens);
  });

  it("counts every key of an organization against its budget, and refuses a budget of no known period", async () => {
    const set = await admin<{ budget: unknown; budget_spent: number }>("PATCH", `/orgs/${gw.orgId}`, { budget: { tokens: 1_000_000, period: "week" } });
    expect(set.status).toBe(200);
    expect(set.body.budget).toEqual({ tokens: 1_000_000, period: "week" });
    const spentBefore = set.body.budget_spent;
    const res = await chat(gw.apiKey, { max_tokens: 3 });
    const used = ((await res.json()) as { usage: { total_tokens: number } }).usage.total_tokens;
    // What was left once its reservation was made: less than before it, by no more than it used here.
    expect(Number(res.headers.get("x-budget-remaining-tokens"))).toBeLessThan(1_000_000 - spentBefore);
    const orgs = await admin<{ data: { id: string; budget_spent: number }[] }>("GET", "/orgs");
    expect(orgs.body.data.find((o) => o.id === gw.orgId)!.budget_spent).toBe(spentBefore + used);
    // Bad budgets are refused in the documented shape.
    const bad = await admin<{ error: { code: string; param: string } }>("PATCH", `/orgs/${gw.orgId}`, { budget: { tokens: 10, period: "year" } });
    expect([bad.status, bad.body.error.code, bad.body.error.param]).toEqual([400, "invalid_value", "budget.period"]);
    await admin("PATCH", `/orgs/${gw.orgId}`, { budget: null });
  });

  it("lets only admins set, change or remove a key's budget: a member's key keeps the budget an admin gave it", async () => {
    await admin("POST", "/users", { org: gw.orgId, login: "intern@example.com", role: "member", password: "intern-password-1" });
    const member = new WebClient(gw.relay.url);
    expect((await member.signIn("intern@example.com", "intern-password-1")).status).toBe(200);
    const refused = await member.call("POST", "/admin/v1/keys", { name: "mine", budget: { tokens: 5, period: "day" } });
    expect([refused.status, ((await refused.json()) as { error: { param: string } }).error.param]).toEqual([403, "budget"]);
    const own = await member.json<{ id: string }>("POST", "/admin/v1/keys", { name: "mine" });
    await admin("PATCH", `/keys/${own.id}`, { budget: { tokens: 100_000, period: "day" } });
    expect((await member.call("PATCH", `/admin/v1/keys/${own.id}`, { budget: null })).status).toBe(403);
    // Sent back as it is (a form sends every field), it is no change: the rest of the edit holds.
    expect(await member.json("PATCH", `/admin/v1/keys/${own.id}`, { name: "mine, renamed", budget: { tokens: 100_000, period: "day" } })).toMatchObject({ name: "mine, renamed", budget: { tokens: 100_000, period: "day" }, budget_spent: 0 });
  });
});
