import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { LoggedRequest, Page } from "../../relay/admin-contract/index.js";
import { OP } from "../helpers/operator.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { WebClient } from "../helpers/web-client.js";

type Tier = "priority" | "default" | "flex";

/** The admin API, as the operator. */
async function admin<T>(gw: TestGateway, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${gw.relay.url}${path}`, { method, headers: { authorization: `Bearer ${gw.relay.adminToken}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  expect(res.status, await res.clone().text()).toBeLessThan(300);
  return (await res.json()) as T;
}

/** A key of the gateway's organization with the given most tier, made through the admin API. */
async function keyOf(gw: TestGateway, name: string, serviceTier: Tier): Promise<{ id: string; key: string }> {
  const made = await admin<{ id: string; key: string; service_tier: string }>(gw, "POST", "/admin/v1/keys", { org: gw.orgId, name, service_tier: serviceTier });
  expect(made.service_tier).toBe(serviceTier);
  return made;
}

/** Posts a chat completion with a key; resolves with the response (its headers, at the first token). */
function chat(gw: TestGateway, key: string, content: string, extra: Record<string, unknown> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content }], ...extra }),
    signal,
  });
}

/** The contents of the requests the stand-in model was given, in the order it started them. */
const started = (gw: TestGateway) => gw.fake(gw.machineId, gw.modelId).seen.map((s) => s.messages.at(-1)!.content);

describe("service tiers on a stack that runs one request at a time (stand-in model)", () => {
  let gw: TestGateway;
  let batch: { id: string; key: string };
  let chatter: { id: string; key: string };
  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake", relayFlags: { maxInFlightPerStack: 1, maxQueuePerStack: 300, queueAgingMs: 200 } });
    batch = await keyOf(gw, "nightly evaluation", "default");
    chatter = await keyOf(gw, "people chatting", "priority");
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("answers in the API's words which tier served it, refuses a tier above the key's, and logs the tier", async () => {
    const openai = new OpenAI({ baseURL: gw.baseURL, apiKey: batch.key, maxRetries: 0 });
    // No tier asked (or auto): the key's.
    const plain = await openai.chat.completions.create({ model: gw.modelId, messages: [{ role: "user", content: "hello there" }] });
    expect([plain.choices[0]!.message.content, plain.service_tier]).toEqual(["hello there", "default"]);
    const flex = await openai.chat.completions.create({ model: gw.modelId, messages: [{ role: "user", content: "later is fine" }], service_tier: "flex", stream: true });
    const tiers = new Set<string | null | undefined>();
    for await (const chunk of flex) tiers.add(chunk.service_tier);
    expect([...tiers]).toEqual(["flex"]);
    // The machine was told the tier and whose turn it takes: the key's id, never its secret.
    expect(gw.fake(gw.machineId, gw.modelId).seen.at(-1)).toMatchObject({ serviceTier: "flex", fairShareKey: batch.id });
    const response = await openai.responses.create({ model: gw.modelId, input: "a response", service_tier: "auto" });
    expect(response.service_tier).toBe("default");

    // Above the key's tier: 403, naming the parameter.
    const refused = await openai.chat.completions.create({ model: gw.modelId, messages: [{ role: "user", content: "now" }], service_tier: "priority" }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((refused as InstanceType<typeof OpenAI.PermissionDeniedError>).error).toEqual({
      message: "This API key may ask for the 'default' service tier at most, not 'priority'. Ask an admin of the organization for a higher tier, or send 'auto'.",
      type: "permission_error",
      param: "service_tier",
      code: "permission_denied",
    });
    const unknownTier = await chat(gw, batch.key, "x", { service_tier: "scale" });
    expect([unknownTier.status, ((await unknownTier.json()) as { error: { param: string } }).error.param]).toEqual([400, "service_tier"]);

    // Anthropic's client: `standard_only` on a priority key is served at default; `auto` at the key's.
    const anthropic = new Anthropic({ baseURL: gw.baseURL.replace(/\/v1$/, ""), apiKey: chatter.key, maxRetries: 0 });
    const standard = await anthropic.messages.create({ model: gw.modelId, max_tokens: 5, messages: [{ role: "user", content: "one" }], service_tier: "standard_only" });
    const auto = await anthropic.messages.create({ model: gw.modelId, max_tokens: 5, messages: [{ role: "user", content: "two" }], service_tier: "auto" });
    expect([standard.usage.service_tier, auto.usage.service_tier]).toEqual(["standard", "priority"]);

    // The request log keeps the tier, and is filtered by it.
    const logged = await admin<Page<LoggedRequest>>(gw, "GET", `/admin/v1/requests?org=${gw.orgId}&service_tier=flex`);
    expect(logged.data.map((r) => [r.service_tier, r.key_id, r.status])).toEqual([["flex", batch.id, 200]]);
    const all = await admin<Page<LoggedRequest>>(gw, "GET", `/admin/v1/requests?org=${gw.orgId}&key=${chatter.id}`);
    expect(all.data.map((r) => r.service_tier)).toEqual(["priority", "default"]);
    // A refusal for the tier is logged too, before it had one.
    const refusals = await admin<Page<LoggedRequest>>(gw, "GET", `/admin/v1/requests?org=${gw.orgId}&key=${batch.id}&status=403`);
    expect(refusals.data.map((r) => [r.error_code, r.service_tier])).toEqual([["permission_denied", ""]]);

    // Usage counts each key's requests by the tier that served them.
    const usage = await admin<{ totals: { group: string; total: { requests: number; priority_requests: number; flex_requests: number } }[] }>(gw, "GET", `/admin/v1/usage?org=${gw.orgId}&by=key`);
    const of = (id: string) => usage.totals.find((t) => t.group === id)!.total;
    // The batch key: its plain, flex, Responses and refused requests; the chatter: a default and a priority one.
    expect(of(batch.id)).toMatchObject({ requests: 5, priority_requests: 0, flex_requests: 1 });
    expect(of(chatter.id)).toMatchObject({ requests: 2, priority_requests: 1, flex_requests: 0 });

    // A key's tier is changed by PATCH, from the next request on.
    expect((await admin<{ service_tier: string }>(gw, "PATCH", `/admin/v1/keys/${batch.id}`, { service_tier: "flex" })).service_tier).toBe("flex");
    expect((await openai.chat.completions.create({ model: gw.modelId, messages: [{ role: "user", content: "demoted" }] })).service_tier).toBe("flex");
    await admin(gw, "PATCH", `/admin/v1/keys/${batch.id}`, { service_tier: "default" });
  });

  it("lets a member make keys of the default and flex tiers, not priority; a key an admin made priority stays so through its member's edits", async () => {
    await admin(gw, "POST", "/admin/v1/users", { org: gw.orgId, login: "member@example.com", role: "member", password: "member-password-1" });
    const member = new WebClient(gw.relay.url);
    expect((await member.signIn("member@example.com", "member-password-1")).status).toBe(200);
    const refused = await member.call("POST", "/admin/v1/keys", { name: "greedy", service_tier: "priority" });
    expect([refused.status, ((await refused.json()) as { error: { code: string; param: string } }).error]).toEqual([403, expect.objectContaining({ code: "permission_denied", param: "service_tier" })]);
    const own = await member.json<{ id: string; service_tier: string }>("POST", "/admin/v1/keys", { name: "mine", service_tier: "flex" });
    expect(own.service_tier).toBe("flex");
    expect((await member.call("PATCH", `/admin/v1/keys/${own.id}`, { service_tier: "priority" })).status).toBe(403);
    // An admin raises it; the member renames it, sending its tier back as it is: it keeps priority.
    await admin(gw, "PATCH", `/admin/v1/keys/${own.id}`, { service_tier: "priority" });
    expect(await member.json("PATCH", `/admin/v1/keys/${own.id}`, { name: "mine, renamed", service_tier: "priority" })).toMatchObject({ name: "mine, renamed", service_tier: "priority" });
  });

  it("runs 5 priority requests before a flood of 200 flex ones queued before them", async () => {
    const holder = new AbortController();
    const held = await chat(gw, batch.key, "stall holding the stack", { stream: true }, holder.signal);
    expect(held.status).toBe(200);
    const before = started(gw).length;
    const flood = Array.from({ length: 200 }, (_, i) => chat(gw, batch.key, `flex ${i}`, { service_tier: "flex" }));
    await vi.waitFor(() => expect(gw.relay.gate.load(gw.stackId).waiting).toBe(200), { timeout: 20_000, interval: 10 });
    const urgent = Array.from({ length: 5 }, (_, i) => chat(gw, chatter.key, `priority ${i}`, { service_tier: "priority" }));
    await vi.waitFor(() => expect(gw.relay.gate.load(gw.stackId).waiting).toBe(205), { timeout: 5_000, interval: 10 });
    holder.abort();
    const answers = await Promise.all([...urgent, ...flood]);
    expect(answers.every((r) => r.status === 200)).toBe(true);
    const order = started(gw).slice(before);
    expect(order.slice(0, 5).sort()).toEqual(["priority 0", "priority 1", "priority 2", "priority 3", "priority 4"]);
    // The flex requests, in the order they came.
    expect(order.slice(5)).toEqual(Array.from({ length: 200 }, (_, i) => `flex ${i}`));
  });

  it("lets a key with 1 request waiting in after one turn of a key with 100 waiting", async () => {
    const other = await keyOf(gw, "a second team", "default");
    const holder = new AbortController();
    await chat(gw, batch.key, "stall holding", { stream: true }, holder.signal);
    const before = started(gw).length;
    const many = Array.from({ length: 100 }, (_, i) => chat(gw, batch.key, `many ${i}`));
    await vi.waitFor(() => expect(gw.relay.gate.load(gw.stackId).waiting).toBe(100), { timeout: 10_000, interval: 10 });
    const one = chat(gw, other.key, "the one");
    await vi.waitFor(() => expect(gw.relay.gate.load(gw.stackId).waiting).toBe(101), { timeout: 5_000, interval: 10 });
    holder.abort();
    await Promise.all([one, ...many]);
    const order = started(gw).slice(before);
    expect(order.indexOf("the one")).toBe(1);
  });

  it("serves a flex request under a continuous default load once it has waited two ageing periods, within a turn of each key", async () => {
    const keys = [batch, await keyOf(gw, "load two", "default")];
    const before = started(gw).length;
    // 60 default requests of 20 ms or more each, from two keys, keep the stack busy for 1.2 s or more.
    const load = Array.from({ length: 60 }, (_, i) => chat(gw, keys[i % 2]!.key, `slow 20 load-${i}`));
    await vi.waitFor(() => expect(gw.relay.gate.load(gw.stackId).waiting).toBeGreaterThan(50), { timeout: 10_000, interval: 5 });
    const flex = chat(gw, chatter.key, "slow 0 the-flex-one", { service_tier: "flex" });
    await Promise.all([flex, ...load]);
    const order = started(gw).slice(before);
    const at = order.indexOf("slow 0 the-flex-one");
    // Without ageing it would run last, after all 60. Aged 200 ms at a time, it ranks as default after 200 ms
    // (10 requests of 20 ms at most) and as priority after 400 ms (20 at most), then waits one turn at most.
    expect(at).toBeGreaterThan(0);
    expect(at).toBeLessThanOrEqual(21);
  });
});

describe("a full queue", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake", relayFlags: { maxInFlightPerStack: 1, maxQueuePerStack: 3 } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("drops its newest flex request, 503 with Retry-After, for an arriving priority one; refuses a flex one arriving at a queue of its tier", async () => {
    const { key } = await gw.relay.control.keys.create(OP, gw.orgId, { name: "priority", serviceTier: "priority" });
    expect(started(gw)).toEqual([]);
    const holder = new AbortController();
    await chat(gw, key, "stall holding", { stream: true }, holder.signal);
    const flex = [0, 1, 2].map((i) => chat(gw, key, `flex ${i}`, { service_tier: "flex" }));
    await vi.waitFor(() => expect(gw.relay.gate.load(gw.stackId).waiting).toBe(3), { timeout: 5_000, interval: 5 });
    const tooMany = await chat(gw, key, "flex 3", { service_tier: "flex" });
    expect([tooMany.status, tooMany.headers.get("retry-after")]).toEqual([503, "1"]);
    const priority = chat(gw, key, "the priority one", { service_tier: "priority" });
    const dropped = await flex[2]!;
    expect([dropped.status, dropped.headers.get("retry-after")]).toEqual([503, "1"]);
    expect(((await dropped.json()) as { error: { message: string } }).error.message).toBe("The model is at capacity, and a request of a higher service tier took this one's place in its queue. Retry shortly.");
    holder.abort();
    const served = await Promise.all([priority, flex[0]!, flex[1]!]);
    expect(served.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(started(gw).slice(1)).toEqual(["the priority one", "flex 0", "flex 1"]);
    // The request log keeps the tier each refusal asked: the two 503s of flex requests, and a rate limit's 429.
    const limited = await gw.relay.control.keys.create(OP, gw.orgId, { name: "limited", rpm: 1, serviceTier: "flex" });
    expect((await chat(gw, limited.key, "first")).status).toBe(200);
    expect((await chat(gw, limited.key, "second")).status).toBe(429);
    const refusals = await admin<Page<LoggedRequest>>(gw, "GET", `/admin/v1/requests?org=${gw.orgId}&status=503`);
    expect(refusals.data.map((r) => [r.service_tier, r.error_code])).toEqual([
      ["flex", "runtime_unavailable"],
      ["flex", "runtime_unavailable"],
    ]);
    const tooFast = await admin<Page<LoggedRequest>>(gw, "GET", `/admin/v1/requests?org=${gw.orgId}&status=429`);
    expect(tooFast.data.map((r) => [r.service_tier, r.error_code])).toEqual([["flex", "rate_limit_requests"]]);
  });
});

describe("service tiers on a GGUF stack with one sequence: the model process hands its sequence by tier", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    // The relay lets every request through to the machine: the order is the model process's.
    // The model's whole trained context: the stream that holds its one sequence is long enough to outlast the flood.
    gw = await startTestGateway({ agentFlags: { parallelSequences: 1, maxContextSize: 2048 }, relayFlags: { maxInFlightPerStack: 300 } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("starts 5 priority requests before 200 flex ones that were waiting for the sequence before them", async () => {
    const batch = await keyOf(gw, "batch", "default");
    const urgent = await keyOf(gw, "urgent", "priority");
    // A stream not read holds the one sequence: 1,900 tokens (seconds of decoding on a loaded machine, which pauses
    // once the unread answer fills the connection's buffers) while 205 requests are sent. (400 tokens were once
    // decoded whole before a loaded machine had sent the flood: every request then ran, and the order was not seen.)
    const holder = new AbortController();
    const held = await chat(gw, batch.key, "Once upon a time", { stream: true, max_tokens: 1900 }, holder.signal);
    expect(held.status).toBe(200);
    const firstBytes: string[] = [];
    const controllers: AbortController[] = [];
    const send = (key: string, name: string, tier: Tier) => {
      const c = new AbortController();
      controllers.push(c);
      return chat(gw, key, `Tell me about ${name}`, { stream: true, max_tokens: 2, service_tier: tier }, c.signal).then(
        async (res) => {
          firstBytes.push(name);
          await res.text();
        },
        () => undefined,
      );
    };
    const flood = Array.from({ length: 200 }, (_, i) => send(batch.key, `flex-${i}`, "flex"));
    await vi.waitFor(() => expect(gw.agent.inference.inFlight).toBe(201), { timeout: 20_000, interval: 10 });
    const first = Array.from({ length: 5 }, (_, i) => send(urgent.key, `priority-${i}`, "priority"));
    await vi.waitFor(() => expect(gw.agent.inference.inFlight).toBe(206), { timeout: 5_000, interval: 10 });
    holder.abort();
    await Promise.all(first);
    // The rest need not run: they are canceled.
    for (const c of controllers) c.abort();
    await Promise.all(flood);
    expect(firstBytes.slice(0, 5).sort()).toEqual(["priority-0", "priority-1", "priority-2", "priority-3", "priority-4"]);
  });
});
