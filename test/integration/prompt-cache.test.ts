import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";

describe("requests that share a prompt go to the replica that holds it (two machines, stand-in model)", () => {
  let gw: TestGateway;
  let second: string;
  let secondAgent: Awaited<ReturnType<TestGateway["addMachine"]>>["agent"];
  const served = (machineId: string) => gw.fake(machineId, gw.modelId).seen.length;
  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake" });
    ({ machineId: second, agent: secondAgent } = await gw.addMachine(gw.orgId));
    await gw.addStack({ orgId: gw.orgId, machineId: second, modelId: gw.modelId });
  });
  afterAll(async () => {
    await gw?.close();
  });

  const chat = (extra: Record<string, unknown>, content = "hello there", signal?: AbortSignal) =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: gw.modelId, messages: [{ role: "system", content: "You help." }, { role: "user", content }], ...extra }),
      signal,
    });

  it("sends 50 requests of one prompt_cache_key to one replica, others elsewhere too, and moves them when it is overloaded or offline", async () => {
    const machines = [gw.machineId, second];
    const before = machines.map(served);
    for (let i = 0; i < 50; i++) expect((await chat({ prompt_cache_key: "conversation-1" }, `turn ${i}`)).status).toBe(200);
    const after = machines.map(served);
    const counts = after.map((n, i) => n - before[i]!);
    expect(counts.sort()).toEqual([0, 50]);
    const home = machines[after.findIndex((n, i) => n - before[i]! === 50)]!;
    const away = machines.find((m) => m !== home)!;
    // Many keys spread over both.
    const spread = machines.map(served);
    for (let i = 0; i < 40; i++) await (await chat({ prompt_cache_key: `conversation-${i + 100}` })).text();
    expect(machines.map((m, i) => served(m) - spread[i]!).every((n) => n > 5)).toBe(true);

    // A held stream of the key stays home; with it, home has more than 25% above the replicas' average in flight:
    // the key's next request moves.
    const holder = new AbortController();
    const held = await chat({ prompt_cache_key: "conversation-1", stream: true }, "stall holding", holder.signal);
    expect(held.status).toBe(200);
    expect(gw.fake(home, gw.modelId).active).toBe(1);
    const moved = served(away);
    expect((await chat({ prompt_cache_key: "conversation-1" }, "while busy")).status).toBe(200);
    expect(served(away)).toBe(moved + 1);
    holder.abort();
    await vi.waitFor(() => expect(gw.fake(home, gw.modelId).active).toBe(0));

    // Its machine offline: the key's requests go to the other replica.
    await (home === gw.machineId ? gw.agent : secondAgent).stop();
    const awayBefore = served(away);
    for (let i = 0; i < 3; i++) expect((await chat({ prompt_cache_key: "conversation-1" }, `after ${i}`)).status).toBe(200);
    expect(served(away)).toBe(awayBefore + 3);
  });
});

describe("two replicas on one machine (stand-in model)", () => {
  let gw: TestGateway;
  let other: string;
  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake" });
    other = await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: gw.modelId });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("keeps a key's requests on one replica, and moves them when that replica (not the machine) has more in flight", async () => {
    const chat = (content: string, stream = false, signal?: AbortSignal) =>
      fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ model: gw.modelId, messages: [{ role: "user", content }], prompt_cache_key: "one conversation", stream }),
        signal,
      });
    const logged = async (n: number) => ((await (await fetch(`${gw.relay.url}/admin/v1/requests?org=${gw.orgId}&per_page=${n}`, { headers: { authorization: `Bearer ${gw.relay.adminToken}` } })).json()) as { data: { stack_id: string }[] }).data.map((r) => r.stack_id);
    for (let i = 0; i < 10; i++) await (await chat(`turn ${i}`)).text();
    const home = (await logged(10))[0]!;
    expect(new Set(await logged(10))).toEqual(new Set([home]));
    // One request held on the home replica: the machine's count is the same for both, the replicas' are not.
    const holder = new AbortController();
    expect((await chat("stall holding", true, holder.signal)).status).toBe(200);
    await (await chat("while it is busy")).text();
    expect((await logged(1))[0]).toBe(home === gw.stackId ? other : gw.stackId);
    holder.abort();
  });
});

describe("a GGUF stack's sequences keep conversations (real model, two sequences)", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ agentFlags: { parallelSequences: 2, maxContextSize: 1024 } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("gives a conversation's second turn the sequence that holds its first: only the new tokens are evaluated, and cached_tokens says so", async () => {
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
    const system = { role: "system" as const, content: "You are a storyteller who tells long stories about a cat named Tom. ".repeat(5) };
    const first = await client.chat.completions.create({ model: gw.modelId, messages: [system, { role: "user", content: "Once upon a time" }], max_tokens: 8, temperature: 0 });
    expect(first.usage!.prompt_tokens_details!.cached_tokens).toBe(0);
    // Another conversation meanwhile takes the other sequence, not this one's.
    const other = await client.chat.completions.create({ model: gw.modelId, messages: [{ role: "user", content: "Something else entirely" }], max_tokens: 8 });
    expect(other.usage!.prompt_tokens_details!.cached_tokens).toBe(0);
    const turn2 = [system, { role: "user" as const, content: "Once upon a time" }, { role: "assistant" as const, content: first.choices[0]!.message.content! }, { role: "user" as const, content: "And then?" }];
    const second = await client.chat.completions.create({ model: gw.modelId, messages: turn2, max_tokens: 8, temperature: 0 });
    // Everything of the first turn's prompt was held: only what came after it was evaluated.
    expect(second.usage!.prompt_tokens_details!.cached_tokens).toBeGreaterThanOrEqual(first.usage!.prompt_tokens);
    expect(second.usage!.prompt_tokens_details!.cached_tokens).toBeLessThan(second.usage!.prompt_tokens);
    // The request log keeps it.
    const logged = (await (await fetch(`${gw.relay.url}/admin/v1/requests?org=${gw.orgId}&per_page=1`, { headers: { authorization: `Bearer ${gw.relay.adminToken}` } })).json()) as { data: { cached_tokens: number; prompt_tokens: number }[] };
    expect(logged.data[0]).toMatchObject({ prompt_tokens: second.usage!.prompt_tokens, cached_tokens: second.usage!.prompt_tokens_details!.cached_tokens });

    // Anthropic's client: the prompt's tokens read from the cache, apart from those evaluated. (The sequence freed
    // longest ago is now the other conversation's: only the choice by what a sequence holds sends this turn home.)
    const anthropic = new Anthropic({ baseURL: gw.baseURL.replace(/\/v1$/, ""), apiKey: gw.apiKey, maxRetries: 0 });
    const third = await anthropic.messages.create({
      model: gw.modelId,
      max_tokens: 4,
      system: system.content,
      messages: [...turn2.slice(1).map((m) => ({ role: m.role as "user" | "assistant", content: m.content })), { role: "assistant", content: second.choices[0]!.message.content! }, { role: "user", content: "The end." }],
    });
    const counted = await anthropic.messages.countTokens({ model: gw.modelId, system: system.content, messages: [...turn2.slice(1).map((m) => ({ role: m.role as "user" | "assistant", content: m.content })), { role: "assistant", content: second.choices[0]!.message.content! }, { role: "user", content: "The end." }] });
    expect(third.usage.cache_read_input_tokens).toBeGreaterThanOrEqual(second.usage!.prompt_tokens);
    expect(third.usage.input_tokens + third.usage.cache_read_input_tokens!).toBe(counted.input_tokens);
  });
});
