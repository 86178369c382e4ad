import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { runCli } from "../helpers/cli.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";

const total = (usages: { promptTokens: number; completionTokens: number }[]) => usages.reduce((n, u) => n + u.promptTokens + u.completionTokens, 0);

/** The orchestrators run on the agent around the runtime: the stand-in model shows every step it was asked. */
describe("orchestrated stacks through the gateway", () => {
  let gw: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake" });
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
    for (const [modelId, orchestrator, orchestratorOptions] of [
      ["refined", "refine", { rounds: 2 }],
      ["voted", "vote", { samples: 3 }],
    ] as const) {
      const stack = await gw.relay.control.stacks.create(OP, { org: gw.orgId, name: modelId, machine: gw.machineId, runtime: "openai", model: "http://fake.invalid/v1#fake", modelId, orchestrator, orchestratorOptions });
      expect(stack.orchestratorOptions).toEqual(orchestratorOptions);
      await gw.relay.control.stacks.deploy(OP, stack.id);
      await gw.relay.deployer.settled(stack.id);
    }
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("answers with the usage of every step, and charges the key's token limit exactly that", async () => {
    for (const [model, steps] of [
      ["refined", 5],
      ["voted", 3],
    ] as const) {
      const fake = gw.fake(gw.machineId, model);
      const before = fake.usages.length;
      const { key } = await gw.relay.control.keys.create(OP, gw.orgId, { tpm: 100_000 });
      const keyed = new OpenAI({ baseURL: gw.baseURL, apiKey: key, maxRetries: 0 });
      const res = await keyed.chat.completions.create({ model, messages: [{ role: "user", content: "tell me about the sea" }], max_tokens: 50 });
      const ran = fake.usages.slice(before);
      expect([model, ran.length]).toEqual([model, steps]);
      expect(res.usage!.prompt_tokens).toBe(ran.reduce((n, u) => n + u.promptTokens, 0));
      expect(res.usage!.completion_tokens).toBe(ran.reduce((n, u) => n + u.completionTokens, 0));
      expect(res.usage!.total_tokens).toBe(total(ran));
      const after = await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${key}` } });
      expect(Number(after.headers.get("x-ratelimit-remaining-tokens"))).toBe(100_000 - total(ran));
    }
  });

  it("streams the final step as it is written, and takes response_format but not tools", async () => {
    let text = "";
    let chunks = 0;
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of await client.chat.completions.create({ model: "refined", messages: [{ role: "user", content: "one two three four" }], stream: true, stream_options: { include_usage: true } })) {
      const piece = chunk.choices[0]?.delta?.content;
      if (piece) {
        text += piece;
        chunks++;
      }
      usage = chunk.usage ?? usage;
    }
    // The stand-in echoes the last user message: the revise step's, which carries the critique.
    const revise = gw.fake(gw.machineId, "refined").seen.at(-1)!;
    expect(text).toBe(revise.messages.at(-1)!.content.split(/\s+/).filter(Boolean).join(" "));
    expect(chunks).toBeGreaterThan(3);
    expect(usage!.total_tokens).toBeGreaterThan(0);
    await expect(client.chat.completions.create({ model: "voted", messages: [{ role: "user", content: "x" }], tools: [{ type: "function", function: { name: "f" } }] })).rejects.toMatchObject({
      status: 400,
      code: "unsupported_parameter",
      param: "tools",
    });
  });

  it("checks the orchestrator's options when the stack is created, and takes them from the command line", async () => {
    const refused = (orchestrator: string | undefined, orchestratorOptions: Record<string, unknown>) =>
      gw.relay.control
        .stacks.create(OP, { org: gw.orgId, name: "bad", machine: gw.machineId, runtime: "openai", model: "http://fake.invalid/v1#fake", modelId: "bad", ...(orchestrator ? { orchestrator } : {}), orchestratorOptions })
        .catch((e: unknown) => e);
    expect(await refused("vote", { samples: 20 })).toMatchObject({ code: "invalid_value", param: "orchestrator_options.samples", message: "'orchestrator_options.samples' must be an integer from 2 to 8." });
    expect(await refused("refine", { depth: 1 })).toMatchObject({ code: "invalid_value", param: "orchestrator_options.depth" });
    expect(await refused(undefined, { rounds: 2 })).toMatchObject({ code: "invalid_value", param: "orchestrator_options", message: "'orchestrator_options' needs a 'orchestrator'." });
    const r = await runCli([
      "admin", "stack", "create", "--org", gw.orgId, "--name", "cli-vote", "--machine", gw.machineId, "--runtime", "openai", "--model", "http://fake.invalid/v1#fake",
      "--model-id", "cli-vote", "--orchestrator", "vote", "--orchestrator-option", "samples=5", "--orchestrator-option", "temperature=0.5", "--data-dir", gw.dataDir, "--json",
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ orchestrator: "vote", orchestrator_options: { samples: 5, temperature: 0.5 } });
    const shown = await runCli([
      "admin", "stack", "create", "--org", gw.orgId, "--name", "cli-refine", "--machine", gw.machineId, "--runtime", "openai", "--model", "http://fake.invalid/v1#fake",
      "--model-id", "cli-refine", "--orchestrator", "refine", "--orchestrator-option", "rounds=2", "--data-dir", gw.dataDir,
    ]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/orchestrator:\s+refine \(rounds=2\)/);
  });
});

/** Canceling an orchestrated request stops the model on the machine, whichever step it is in. */
describe("an orchestrated GGUF stack", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ agentFlags: { maxContextSize: 2048 } });
    await gw.addStack({ orgId: gw.orgId, machineId: gw.machineId, modelId: "voting", layers: { orchestrator: "vote", orchestratorOptions: { samples: 2 } } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("stops every step on the machine when the client goes away, and the key pays what was generated", async () => {
    const inference = gw.agent.inference;
    const controller = new AbortController();
    const request = fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "voting", messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 1500, temperature: 1, stream: true }),
      signal: controller.signal,
    }).catch((e: unknown) => e);
    // The request is on the machine (its samples start; neither gets near its 1,500 tokens): the client leaves.
    await vi.waitFor(() => expect(inference.inFlight).toBe(1), { timeout: 10_000, interval: 10 });
    controller.abort();
    await request;
    await vi.waitFor(() => expect(inference.inFlight).toBe(0), { timeout: 10_000, interval: 10 });
    // The model is free again at once: a new request is answered.
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.apiKey, maxRetries: 0 });
    const next = await client.chat.completions.create({ model: "voting", messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 4 });
    expect(next.choices[0]!.message.content!.length).toBeGreaterThan(0);
    // Whatever the samples had decoded when they stopped, far from the whole: the charge of the two requests.
    const charged = (await gw.relay.usage.series(gw.orgId, "24h", "model")).totals.find((t) => t.group === "voting")!.total;
    expect(charged.requests).toBe(2);
    expect(charged.completionTokens).toBeLessThan(2 * 1500);
  });
});
