#!/usr/bin/env node
// Issue 44's two measures (npm run bench runs it; docs/benchmarks.md has the results and how they were taken):
//
// 1. Tiers. A GGUF stack of two context sequences, relay and agent in this process (as `makina up` runs them),
//    the model in its own process. A `priority` request's time to first token (streamed, 4 tokens), one after
//    another, in two settings that alternate: "idle + 1": one `default` generation running beside it; "flex
//    flood": 40 clients each sending `flex` requests of 64 tokens back to back, so the stack is never idle and
//    `flex` requests wait for it. The target: p95 under the flood within 1.2× of p95 idle + 1.
// 2. Prompts where they are held. The GGUF runtime as the model process runs it (node-llama-cpp in this
//    process, two sequences, 1 thread), two conversations taking turns (A1, B1, A2, B2, …, 20 turns each), each
//    with its own system prompt of about 1,000 tokens (the test model's context is 2,048 per sequence: the 20
//    turns, about 45 tokens each, fit beside it): the total time to first token (the prompt's evaluation) and its mean, choosing the
//    sequence that holds the prompt ("held-prefix", this tree) against the one freed last ("last-freed", the
//    choice before), fresh runtimes, alternating, in the same run.
//    Then the same with system prompts of about 2,000 tokens on the random-weights test model (its context is 4,096).
// Knobs: MAKINA_BENCH_MODEL (default ../shared/models/stories260K.gguf), MAKINA_BENCH_LONG_MODEL (default
// ../shared/models/llama-2-tiny-random.gguf), MAKINA_BENCH_ROUNDS (2), MAKINA_BENCH_ONLY=prefix (measure 2 alone),
// MAKINA_BENCH_JSON (also write the results there).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const model = resolve(process.env.MAKINA_BENCH_MODEL ?? join(root, "..", "shared", "models", "stories260K.gguf"));
const ROUNDS = Number(process.env.MAKINA_BENCH_ROUNDS ?? 2);
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const ms = (x) => `${x.toFixed(1)} ms`;
const results = {};

// ---- 1. Tiers through the gateway -------------------------------------------------------------------------
if (process.env.MAKINA_BENCH_ONLY !== "prefix") {
  const { resolveRelayConfig, startRelay } = await import(join(root, "dist/relay/index.js"));
  const OP = (await import(join(root, "dist/relay/auth/index.js"))).operatorActor();
  const { resolveAgentConfig, startAgent } = await import(join(root, "dist/agent/index.js"));
  const { silentLogger } = await import(join(root, "dist/proto/index.js"));
  const dir = mkdtempSync(join(tmpdir(), "makina-bench-tiers-"));
  const log = silentLogger();
  const relay = await startRelay(resolveRelayConfig({ flags: { dataDir: join(dir, "relay"), port: 0, grpcPort: 0, grpcHost: "127.0.0.1" } }), { log });
  const org = await relay.control.orgs.create(OP, { name: "bench" });
  const { machine, token } = await relay.control.machines.create(OP, { org: org.id, name: "bench" });
  const agent = await startAgent(
    resolveAgentConfig({ flags: { server: relay.linkAddress, machineId: machine.id, token, dataDir: join(dir, "agent"), gpu: false, threads: 1, maxContextSize: 512, parallelSequences: 2 }, env: process.env }),
    { log, dial: relay.inProcessDialer({ machineId: machine.id, token }) },
  );
  await agent.link.whenOnline();
  const stack = await relay.control.stacks.create(OP, { org: org.id, name: "bench", machine: machine.id, runtime: "gguf", model, modelId: "bench" });
  await relay.control.stacks.deploy(OP, stack.id);
  await relay.deployer.settled(stack.id);
  const keyOf = async (serviceTier) => (await relay.control.keys.create(OP, org.id, { name: serviceTier, serviceTier })).key;
  const keys = { priority: await keyOf("priority"), default: await keyOf("default"), flex: await keyOf("flex") };

  /** One streamed request; resolves with its time to the first content and to the end, ms. */
  async function ask(tier, maxTokens, signal) {
    const t0 = performance.now();
    const res = await fetch(`${relay.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${keys[tier]}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "bench", messages: [{ role: "user", content: "Once upon a time" }], max_tokens: maxTokens, stream: true, service_tier: tier }),
      signal,
    });
    let first = 0;
    let seen = "";
    const decoder = new TextDecoder();
    for await (const chunk of res.body) {
      if (first) continue;
      // The first chunk that carries text (the one that opens the stream carries "").
      seen += decoder.decode(chunk, { stream: true });
      if (/"content":"[^"]/.test(seen)) first = performance.now() - t0;
    }
    return { first: first || performance.now() - t0, total: performance.now() - t0 };
  }

  /** Keeps `n` clients sending requests of `tier` back to back until stopped. */
  function background(n, tier, maxTokens) {
    const controller = new AbortController();
    let stopped = false;
    const loops = Array.from({ length: n }, async () => {
      while (!stopped) await ask(tier, maxTokens, controller.signal).catch(() => undefined);
    });
    return async () => {
      stopped = true;
      controller.abort();
      await Promise.all(loops);
    };
  }

  /** `n` priority requests one after another (after 5 not counted); their times to first token. */
  async function priorityTimes(n) {
    const times = [];
    for (let i = 0; i < n + 5; i++) {
      const { first } = await ask("priority", 4);
      if (i >= 5) times.push(first);
      await new Promise((r) => setTimeout(r, 20));
    }
    return times;
  }

  const idle = [];
  const flood = [];
  for (let round = 0; round < ROUNDS; round++) {
    let stop = background(1, "default", 200);
    await new Promise((r) => setTimeout(r, 300));
    idle.push(...(await priorityTimes(40)));
    await stop();
    stop = background(40, "flex", 64);
    await new Promise((r) => setTimeout(r, 1000));
    const waitingFlex = relay.gate.load(stack.id);
    flood.push(...(await priorityTimes(40)));
    await stop();
    console.log(`round ${round + 1}: flood kept ${waitingFlex.inFlight} in flight at the relay (${waitingFlex.waiting} queued)`);
  }
  results.tiers = {
    idlePlusOne: { p50: pct(idle, 50), p95: pct(idle, 95), n: idle.length },
    flexFlood: { p50: pct(flood, 50), p95: pct(flood, 95), n: flood.length },
    ratioP95: pct(flood, 95) / pct(idle, 95),
  };
  console.log("priority time to first token (streamed, 4 tokens, 2 sequences):");
  console.log(`  idle + 1 running generation: p50 ${ms(pct(idle, 50))}, p95 ${ms(pct(idle, 95))} (n=${idle.length})`);
  console.log(`  under a flex flood (40 clients): p50 ${ms(pct(flood, 50))}, p95 ${ms(pct(flood, 95))} (n=${flood.length})`);
  console.log(`  p95 ratio: ${results.tiers.ratioP95.toFixed(2)}× (target ≤ 1.2×)`);
  await agent.stop();
  await relay.stop();
  rmSync(dir, { recursive: true, force: true });
}

// ---- 2. Prompts where they are held -----------------------------------------------------------------------
{
  const { getLlama } = await import("node-llama-cpp");
  const { loadGgufModel } = await import(join(root, "dist/agent/runtimes/gguf/gguf-runtime.js"));
  const llama = await getLlama({ gpu: false, logLevel: "error" });
  const base = { temperature: 0, topP: 1, maxTokens: 8, stop: [], presencePenalty: 0, frequencyPenalty: 0, stream: true };

  /** Runs one request on a runtime: its time to the first text, its answer, and its usage. */
  async function run(runtime, messages) {
    const t0 = performance.now();
    let first = 0;
    let text = "";
    let usage;
    for await (const ev of runtime.chat({ ...base, messages })) {
      if (ev.type === "text") {
        first ||= performance.now() - t0;
        text += ev.text;
      } else if (ev.type === "end") usage = ev.usage;
      else if (ev.type === "stopped") throw new Error(`a turn failed: ${ev.error?.message ?? "stopped"}`);
    }
    return { first: first || performance.now() - t0, text, usage };
  }

  /**
   * Two conversations taking turns on one runtime of two sequences, each with a system prompt of about
   * `systemTokens` tokens, 20 turns each, for each choice of sequence (fresh runtimes, alternating).
   */
  async function conversations(label, file, contextSize, systemTokens) {
    // Two system prompts of about `systemTokens` tokens, told apart from their first words.
    const probe = await loadGgufModel(llama, file, { maxContextSize: contextSize, sequences: 1, threads: 1 });
    const sentence = "The cat named Tom liked to sit by the window and watch the birds fly over the green garden. ";
    let per = 0;
    for await (const ev of probe.chat({ ...base, countOnly: true, messages: [{ role: "system", content: sentence.repeat(10) }] })) if (ev.type === "end") per = ev.usage.promptTokens / 10;
    await probe.close();
    const systems = ["Alice", "Bob"].map((who) => `${who} tells this story. ${sentence.repeat(Math.floor(systemTokens / per))}`);

    const modes = { "held-prefix": { firsts: [], prompt: 0, cached: 0 }, "last-freed": { firsts: [], prompt: 0, cached: 0 } };
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of round % 2 === 0 ? ["held-prefix", "last-freed"] : ["last-freed", "held-prefix"]) {
        const runtime = await loadGgufModel(llama, file, { maxContextSize: contextSize, sequences: 2, threads: 1, sequenceChoice: mode });
        const talks = systems.map((content) => [{ role: "system", content }]);
        for (let turn = 0; turn < 20; turn++) {
          for (const history of talks) {
            history.push({ role: "user", content: `Turn ${turn + 1}: what happened next?` });
            const { first, text, usage } = await run(runtime, history);
            history.push({ role: "assistant", content: text });
            modes[mode].firsts.push(first);
            modes[mode].prompt += usage.promptTokens;
            modes[mode].cached += usage.cachedTokens ?? 0;
          }
        }
        await runtime.close();
      }
    }
    results.prefix ??= {};
    results.prefix[label] = {};
    console.log(`${label}: two conversations taking turns, 20 turns each, ~${systemTokens}-token system prompts, 2 sequences of ${contextSize} tokens (${ROUNDS} rounds):`);
    for (const [mode, m] of Object.entries(modes)) {
      const total = m.firsts.reduce((a, b) => a + b, 0);
      results.prefix[label][mode] = { totalFirstTokenMs: total / ROUNDS, meanFirstTokenMs: total / m.firsts.length, promptTokens: m.prompt / ROUNDS, cachedTokens: m.cached / ROUNDS };
      console.log(`  ${mode}: time to first token ${ms(total / ROUNDS)} in all (mean ${ms(total / m.firsts.length)}), prompt tokens ${m.prompt / ROUNDS}, of them cached ${m.cached / ROUNDS}`);
    }
  }

  // The trained test model: its 2,048-token context leaves room for 20 turns beside a system prompt of about 1,000.
  await conversations("stories260K", model, 2048, 1000);
  // The 2,000-token system prompt: the random-weights test model, whose context is 4,096 tokens.
  await conversations("llama-2-tiny-random", resolve(process.env.MAKINA_BENCH_LONG_MODEL ?? join(root, "..", "shared", "models", "llama-2-tiny-random.gguf")), 4096, 2000);
  await llama.dispose();
}

if (process.env.MAKINA_BENCH_JSON) writeFileSync(process.env.MAKINA_BENCH_JSON, JSON.stringify(results, null, 2) + "\n");
