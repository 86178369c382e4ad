import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";
import { OP } from "../helpers/operator.js";

/** The system-prompt harness runs on the agent, in front of the runtime: the stand-in model shows what it was asked. */
describe("the system-prompt harness", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake" });
  });
  afterAll(async () => {
    await gw?.close();
  });
  const chat = (model: string, body: Record<string, unknown>) =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model, ...body }),
    });
  const create = (extra: Record<string, unknown>, modelId: string) =>
    gw.relay.control.stacks.create(OP, { org: gw.orgId, name: modelId, machine: gw.machineId, runtime: "openai", model: "http://fake.invalid/v1#fake", modelId, ...extra });

  it("adds its system prompt and default sampling where the request sets none, and leaves the request's own alone", async () => {
    const stack = await create({ harness: "system-prompt", harnessOptions: { prompt: "You answer in one word.", temperature: 0.2, top_p: 0.5, max_tokens: 3 } }, "terse");
    expect(stack.harnessOptions).toEqual({ prompt: "You answer in one word.", temperature: 0.2, top_p: 0.5, max_tokens: 3 });
    await gw.relay.control.stacks.deploy(OP, stack.id);
    await gw.relay.deployer.settled(stack.id);
    const seen = () => gw.fake(gw.machineId, "terse").seen.at(-1)!;

    const plain = await chat("terse", { messages: [{ role: "user", content: "one two three four five" }] });
    expect(((await plain.json()) as { choices: { message: { content: string }; finish_reason: string }[] }).choices[0]).toMatchObject({ message: { content: "one two three" }, finish_reason: "length" });
    expect(seen()).toMatchObject({ messages: [{ role: "system", content: "You answer in one word." }, { role: "user", content: "one two three four five" }], temperature: 0.2, topP: 0.5, maxTokens: 3 });

    await (await chat("terse", { messages: [{ role: "system", content: "Be long." }, { role: "user", content: "hi" }], temperature: 1.5, top_p: 0.9, max_tokens: 50 })).text();
    expect(seen()).toMatchObject({ messages: [{ role: "system", content: "Be long." }, { role: "user", content: "hi" }], temperature: 1.5, topP: 0.9, maxTokens: 50 });
  });

  it("checks its options when the stack is created: names, types, ranges, the prompt it needs", async () => {
    const refused = async (extra: Record<string, unknown>) => (await create(extra, `refused-${Math.random().toString(36).slice(2, 8)}`).catch((e: unknown) => e)) as { code: string; param: string; message: string };
    expect(await refused({ harness: "system-prompt", harnessOptions: { prompt: "x", colour: "red" } })).toMatchObject({ code: "invalid_value", param: "harness_options.colour", message: "The system-prompt layer has no option 'colour'; it takes prompt, temperature, top_p, max_tokens." });
    expect(await refused({ harness: "system-prompt", harnessOptions: { temperature: 0.5 } })).toMatchObject({ code: "invalid_value", param: "harness_options.prompt" });
    expect(await refused({ harness: "system-prompt", harnessOptions: { prompt: "x", temperature: 3 } })).toMatchObject({ code: "invalid_value", param: "harness_options.temperature", message: "'harness_options.temperature' must be a number from 0 to 2." });
    expect(await refused({ harnessOptions: { prompt: "x" } })).toMatchObject({ code: "invalid_value", param: "harness_options" });
  });

  it("is set from the command line with --harness-option key=value", async () => {
    const r = await runCli([
      "admin", "stack", "create", "--org", gw.orgId, "--name", "cli-harness", "--machine", gw.machineId, "--runtime", "openai", "--model", "http://fake.invalid/v1#fake",
      "--model-id", "cli-harness", "--harness", "system-prompt", "--harness-option", "prompt=Be kind, always.", "--harness-option", "temperature=0.4", "--data-dir", gw.dataDir, "--json",
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { harness_options: unknown }).harness_options).toEqual({ prompt: "Be kind, always.", temperature: 0.4 });
    const bad = await runCli(["admin", "stack", "create", "--org", gw.orgId, "--name", "x", "--machine", gw.machineId, "--runtime", "openai", "--model", "m", "--harness", "system-prompt", "--harness-option", "prompt", "--data-dir", gw.dataDir]);
    expect([bad.code, bad.stderr.trim()]).toEqual([2, "makina: --harness-option takes key=value, got 'prompt'."]);
  });
});

describe("the system-prompt harness in front of a real GGUF model", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("reaches the model: the prompt it adds is counted in the usage", async () => {
    const ask = async (model: string) => {
      const res = await fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ model, messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 2 }),
      });
      return ((await res.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens;
    };
    const stack = await gw.relay.control.stacks.create(OP, { org: gw.orgId, name: "framed", machine: gw.machineId, runtime: "gguf", model: (await gw.relay.control.stacks.get(OP, gw.stackId)).modelRef, modelId: "framed", harness: "system-prompt", harnessOptions: { prompt: "You are a storyteller who loves dragons and castles." } });
    await gw.relay.control.stacks.deploy(OP, stack.id);
    await gw.relay.deployer.settled(stack.id);
    expect(await ask("framed")).toBeGreaterThan(await ask(gw.modelId));
  });
});

/** The router harness runs on the relay: the stand-in models show which one each request reached. */
describe("the router harness", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake" });
    for (const modelId of ["small", "big"]) {
      const st = await gw.relay.control.stacks.create(OP, { org: gw.orgId, name: modelId, machine: gw.machineId, runtime: "openai", model: "http://fake.invalid/v1#fake", modelId });
      await gw.relay.control.stacks.deploy(OP, st.id);
      await gw.relay.deployer.settled(st.id);
    }
  });
  afterAll(async () => {
    await gw?.close();
  });
  /** Asks a model (a router's, "auto" unless named); resolves with the status and the model that answered, or the error. */
  const ask = async (content: string, key = gw.apiKey, model = "auto") => {
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model, messages: [{ role: "user", content }] }),
    });
    const body = (await res.json()) as { model?: string; error?: { code: string; message: string } };
    return [res.status, body.model ?? body.error?.code];
  };

  it("sends each request where its rules say, first match wins, else to its default; the answer names the model", async () => {
    const router = await gw.relay.control.stacks.create(OP, {
      org: gw.orgId,
      name: "auto",
      machine: gw.machineId,
      runtime: "openai",
      model: "http://fake.invalid/v1#fake",
      modelId: "auto",
      harness: "router",
      harnessOptions: { routes: JSON.stringify([{ model: "big", min_chars: 60 }, { model: "big", pattern: "\\bexplain\\b" }]), default: "small" },
    });
    await gw.relay.control.stacks.deploy(OP, router.id);
    await gw.relay.deployer.settled(router.id);
    const seenBy = (model: string) => gw.fake(gw.machineId, model).seen.map((s) => s.messages.at(-1)!.content);

    expect(await ask("hello there")).toEqual([200, "small"]);
    expect(await ask("please EXPLAIN this")).toEqual([200, "big"]);
    expect(await ask("a long question ".repeat(5))).toEqual([200, "big"]);
    expect(seenBy("small")).toEqual(["hello there"]);
    expect(seenBy("big")).toEqual(["please EXPLAIN this", "a long question ".repeat(5)]);
    // The router's own model answers nothing: every request went on.
    expect(gw.fake(gw.machineId, "auto").seen).toEqual([]);

    // A key restricted to the router's stack alone does not reach the models it routes to.
    const { key } = await gw.relay.control.keys.create(OP, gw.orgId, { name: "router-only", stackIds: [router.id] });
    expect(await ask("hello there", key)).toEqual([403, "model_access_denied"]);
  });

  it("routes requests with an image by an images rule, and the image reaches the model that answers", async () => {
    const router = await gw.relay.control.stacks.create(OP, {
      org: gw.orgId,
      name: "vision-router",
      machine: gw.machineId,
      runtime: "openai",
      model: "http://fake.invalid/v1#fake",
      modelId: "eyes",
      harness: "router",
      harnessOptions: { routes: [{ model: "big", images: true }], default: "small" },
    });
    await gw.relay.control.stacks.deploy(OP, router.id);
    await gw.relay.deployer.settled(router.id);
    // Inline: an image named by URL is fetched by the agent first (image-urls.test.ts).
    const image = { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=", detail: "high" } };
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "eyes", messages: [{ role: "user", content: [{ type: "text", text: "What is this" }, image] }] }),
    });
    expect([res.status, ((await res.json()) as { model: string }).model]).toEqual([200, "big"]);
    expect(gw.fake(gw.machineId, "big").seen.at(-1)!.messages[0]!.parts).toEqual([
      { type: "text", text: "What is this", imageUrl: "", detail: "" },
      { type: "image_url", text: "", imageUrl: "data:image/png;base64,iVBORw0KGgo=", detail: "high" },
    ]);
    const plain = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${gw.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "eyes", messages: [{ role: "user", content: "No picture" }] }),
    });
    expect(((await plain.json()) as { model: string }).model).toBe("small");
  });

  it("matches patterns in linear time: the classic catastrophic ones answer at once while other requests go on", async () => {
    // Each of these backtracks exponentially in JavaScript's own engine on 40 a's and a '!': the relay's only
    // thread stalled for hours, for every organization. (A test that fails by never ending: the suite's timeout.)
    const catastrophic = ["^(a+)+$", "(a|aa)+$", "(.*a){12}", "^(([a-z])+.)+[A-Z]([a-z])+$", "(a|a?)+b", "(\\w+\\s?)+$"];
    const router = await gw.relay.control.stacks.create(OP, {
      org: gw.orgId,
      name: "redos",
      machine: gw.machineId,
      runtime: "openai",
      model: "http://fake.invalid/v1#fake",
      modelId: "redos",
      harness: "router",
      harnessOptions: { routes: [...catastrophic.map((pattern) => ({ model: "big", pattern })), { model: "big", pattern: "\\bexplain\\b" }], default: "small" },
    });
    await gw.relay.control.stacks.deploy(OP, router.id);
    await gw.relay.deployer.settled(router.id);
    const askRouter = (content: string) => ask(content, gw.apiKey, "redos");
    const hostile = ["a".repeat(40) + "!", "a".repeat(65_536) + "!", ("ab ".repeat(30) + "!").toUpperCase()];
    const answers = await Promise.all([...hostile.map(askRouter), ...Array.from({ length: 5 }, () => ask("meanwhile"))]);
    // (.*a){12} is found in the first two: 'big'. The third has 30 a's too (case-insensitive).
    expect(answers).toEqual([[200, "big"], [200, "big"], [200, "big"], ...Array.from({ length: 5 }, () => [200, "small"])]);
    expect(await askRouter("c".repeat(40) + "!")).toEqual([200, "small"]);
    expect(await askRouter("Please explain")).toEqual([200, "big"]);
    // Only the first 4,096 characters of the last user message are looked at.
    expect(await askRouter(".".repeat(4096) + " explain")).toEqual([200, "small"]);
    expect(await askRouter(".".repeat(4000) + " explain")).toEqual([200, "big"]);
  });

  it("matches nothing with the patterns of a router stored before its budget was checked, when they are over it", async () => {
    // As a router stored by an older relay: rules the creation check would refuse now, written directly.
    const heavy = { model: "big", pattern: "[a-z]{1,60}[0-9]{1,60}" };
    const stored = await gw.relay.store.stacks.create({
      orgId: gw.orgId,
      name: "old-router",
      machineId: gw.machineId,
      runtime: "openai",
      modelRef: "http://fake.invalid/v1#fake",
      modelId: "old-router",
      harness: "router",
      harnessOptions: { routes: [heavy, heavy, heavy, heavy, heavy, { model: "big", min_chars: 1000 }], default: "small" },
      hasEndpoint: true,
    });
    // Deployed by then (a new deployment's configure step refuses such rules on the machine too).
    await gw.relay.store.stacks.transition(stored.id, "deploying");
    await gw.relay.store.stacks.transition(stored.id, "deployed");
    const askOld = (content: string) => ask(content, gw.apiKey, "old-router");
    // "abc123" matches each pattern; over the budget, they match nothing. Its other rules still hold.
    expect(await askOld("abc123")).toEqual([200, "small"]);
    expect(await askOld("abc123 ".repeat(200))).toEqual([200, "big"]);
  });

  it("checks its rules when the stack is created", async () => {
    const refused = async (harnessOptions: Record<string, unknown>) =>
      (await gw.relay.control
        .stacks.create(OP, { org: gw.orgId, name: `r-${Math.random().toString(36).slice(2, 8)}`, machine: gw.machineId, runtime: "openai", model: "http://fake.invalid/v1#fake", modelId: "r", harness: "router", harnessOptions })
        .catch((e: unknown) => e)) as { code: string; param: string; message: string };
    expect(await refused({})).toMatchObject({ code: "invalid_value", param: "harness_options.routes" });
    expect(await refused({ routes: "[]" })).toMatchObject({ param: "harness_options.routes", message: "'harness_options.routes' must be an array of 1 to 32 rules." });
    expect(await refused({ routes: [{ pattern: "x" }] })).toMatchObject({ param: "harness_options.routes[0].model" });
    expect(await refused({ routes: [{ model: "big", pattern: "(" }] })).toMatchObject({ param: "harness_options.routes[0].pattern", message: expect.stringContaining("is not a regular expression") });
    // RE2's syntax: no lookaround, no backreferences; and a bounded cost per character.
    expect(await refused({ routes: [{ model: "big", pattern: "foo(?=bar)" }] })).toMatchObject({ param: "harness_options.routes[0].pattern", message: expect.stringContaining("RE2 syntax") });
    expect(await refused({ routes: [{ model: "big", pattern: "(a)\\1" }] })).toMatchObject({ param: "harness_options.routes[0].pattern", message: expect.stringContaining("RE2 syntax") });
    expect(await refused({ routes: [{ model: "big", pattern: "[a-z]{1,200}" }] })).toMatchObject({ param: "harness_options.routes[0].pattern", message: expect.stringContaining("too complex") });
    const heavy = { model: "big", pattern: "[a-z]{1,60}[0-9]{1,60}" };
    expect(await refused({ routes: [heavy, heavy, heavy, heavy, heavy] })).toMatchObject({ param: "harness_options.routes[4].pattern", message: expect.stringContaining("more than 1024 instructions") });
    expect(await refused({ routes: [{ model: "big", colour: "red" }] })).toMatchObject({ param: "harness_options.routes[0].colour" });
    expect(await refused({ routes: [{ model: "big", images: "yes" }] })).toMatchObject({ param: "harness_options.routes[0].images", message: "'harness_options.routes[0].images' must be true or false." });
  });
});
