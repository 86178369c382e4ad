#!/usr/bin/env node
// What each API's codec adds, and embeddings per second (npm run bench runs it after bench-gguf.mjs).
// 1. Codecs: the instant OpenAI-compatible stand-in (scripts/bench/instant-openai-server.mjs) behind a gateway
//    process (relay and agent together, as `makina up`); this process calls it one request at a time through
//    chat completions, the Messages API and the Responses API (each turned into the same request on the link),
//    in interleaved rounds (6 of 50 requests each, each round starting with another API): p50 to the whole non-streamed answer and to the first byte of a streamed one, and
//    with autocannon at 16 connections (3 interleaved rounds, median), req/s and the gateway's CPU per request.
//    What a codec adds is its row minus the chat row.
// 2. Embeddings: a GGUF stack of the test model (its own process, 1 thread) through the gateway, against
//    node-llama-cpp's embedding context in this process on the same model, context size and thread count:
//    inputs embedded per second, one input per request and 16 per request, in alternating rounds.
// Knobs: MAKINA_BENCH_MODEL (a GGUF file; default ../shared/models/stories260K.gguf), MAKINA_BENCH_SECONDS.
import autocannon from "autocannon";
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, cpus, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { children, cpuMs, pct, start } from "./bench/bench-children.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const seconds = Number(process.env.MAKINA_BENCH_SECONDS ?? 3);
const dir = mkdtempSync(join(tmpdir(), "makina-bench-apis-"));
const median = (xs) => pct(xs, 50);
// 1. Codecs.
const { msg: standin } = await start("scripts/bench/instant-openai-server.mjs", ["0", "16"], "port");
const { child: gatewayChild, msg: gateway } = await start("scripts/bench/gateway-process.mjs", ["one", join(dir, "one"), `http://127.0.0.1:${standin.port}/v1`], "url");
const APIS = {
  chat: { path: "/v1/chat/completions", headers: {}, body: (stream) => ({ model: "instant", messages: [{ role: "user", content: "Say hello." }], ...(stream ? { stream: true, max_tokens: 16 } : {}) }) },
  messages: { path: "/v1/messages", headers: { "anthropic-version": "2023-06-01" }, body: (stream) => ({ model: "instant", max_tokens: 16, messages: [{ role: "user", content: "Say hello." }], ...(stream ? { stream: true } : {}) }) },
  responses: { path: "/v1/responses", headers: {}, body: (stream) => ({ model: "instant", input: "Say hello.", max_output_tokens: 16, ...(stream ? { stream: true } : {}) }) },
};
const headersOf = (api) => ({ "content-type": "application/json", authorization: `Bearer ${gateway.plain}`, ...api.headers });

async function oneAtATime(api, n) {
  const whole = [];
  const first = [];
  for (let i = 0; i < n; i++) {
    let t = performance.now();
    const res = await fetch(`${gateway.url}${api.path}`, { method: "POST", headers: headersOf(api), body: JSON.stringify(api.body(false)) });
    if (!res.ok) throw new Error(`${api.path}: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
    whole.push(performance.now() - t);
    t = performance.now();
    const streamed = await fetch(`${gateway.url}${api.path}`, { method: "POST", headers: headersOf(api), body: JSON.stringify(api.body(true)) });
    const reader = streamed.body.getReader();
    await reader.read();
    first.push(performance.now() - t);
    while (!(await reader.read()).done);
  }
  return { whole, first };
}

async function underLoad(api, stream) {
  const before = cpuMs(gatewayChild.pid);
  const r = await autocannon({ url: `${gateway.url}${api.path}`, method: "POST", headers: headersOf(api), body: JSON.stringify(api.body(stream)), connections: 16, duration: seconds });
  const ok = r.requests.total - r.non2xx;
  if (r.non2xx || r.errors) process.stderr.write(`  warning: ${api.path}: ${r.non2xx} non-2xx, ${r.errors} errors\n`);
  return { rps: ok / seconds, cpuMs: (cpuMs(gatewayChild.pid) - before) / Math.max(1, ok) };
}

const codecRows = Object.fromEntries(Object.keys(APIS).map((name) => [name, { whole: [], first: [], load: [], streamLoad: [] }]));
// Each round starts with another API, so that none is always the first after a switch.
const rotated = (round) => {
  const entries = Object.entries(APIS);
  return [...entries.slice(round % entries.length), ...entries.slice(0, round % entries.length)];
};
for (let round = 0; round < 6; round++) {
  for (const [name, api] of rotated(round)) {
    const { whole, first } = await oneAtATime(api, 50);
    codecRows[name].whole.push(...whole);
    codecRows[name].first.push(...first);
  }
}
for (let round = 0; round < 3; round++) {
  for (const [name, api] of rotated(round)) {
    codecRows[name].load.push(await underLoad(api, false));
    codecRows[name].streamLoad.push(await underLoad(api, true));
  }
}
gatewayChild.kill("SIGTERM");

// 2. Embeddings.
const { resolveRelayConfig, startRelay } = await import(join(root, "dist/relay/index.js"));
// The operator (the admin token), as the control plane knows it.
const OP = (await import(join(root, "dist/relay/auth/index.js"))).operatorActor();
const { resolveAgentConfig, startAgent } = await import(join(root, "dist/agent/index.js"));
const { silentLogger } = await import(join(root, "dist/proto/index.js"));
const { getLlama, LlamaLogLevel } = await import("node-llama-cpp");
const modelPath = resolve(process.env.MAKINA_BENCH_MODEL ?? join(root, "..", "shared", "models", "stories260K.gguf"));
const contextSize = 2048;
const log = silentLogger();
const relay = await startRelay(resolveRelayConfig({ flags: { dataDir: join(dir, "gguf"), port: 0, grpcPort: 0, grpcHost: "127.0.0.1" } }), { log });
const org = await relay.control.orgs.create(OP, { name: "bench" });
const { machine, token } = await relay.control.machines.create(OP, { org: org.id, name: "bench" });
const agent = await startAgent(resolveAgentConfig({ flags: { server: relay.linkAddress, machineId: machine.id, token, dataDir: join(dir, "agent"), gpu: false, threads: 1, maxContextSize: contextSize } }), {
  log,
  dial: relay.inProcessDialer({ machineId: machine.id, token }),
});
await agent.link.whenOnline();
const stack = await relay.control.stacks.create(OP, { org: org.id, name: "bench", machine: machine.id, runtime: "gguf", model: modelPath, modelId: "bench" });
await relay.control.stacks.deploy(OP, stack.id);
await relay.deployer.settled(stack.id);
const { key } = await relay.control.keys.create(OP, org.id, {});
const texts = Array.from({ length: 64 }, (_, i) => `Story ${i}: once upon a time a little ${["cat", "dog", "bird", "fish"][i % 4]} went to the park and played with ${i} friends.`);

const llama = await getLlama({ gpu: false, logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath });
const own = await model.createEmbeddingContext({ threads: 1, contextSize: Math.min(model.trainContextSize, contextSize) });
async function inProcess() {
  const t = performance.now();
  for (const text of texts) await own.getEmbeddingFor(text);
  return texts.length / ((performance.now() - t) / 1000);
}
async function throughGateway(batch) {
  const t = performance.now();
  for (let i = 0; i < texts.length; i += batch) {
    const res = await fetch(`${relay.url}/v1/embeddings`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ model: "bench", input: texts.slice(i, i + batch) }) });
    if (!res.ok) throw new Error(`embeddings: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  }
  return texts.length / ((performance.now() - t) / 1000);
}
await throughGateway(16); // the model process makes its embedding context on the first request
const rates = { inProcess: [], one: [], sixteen: [] };
for (let round = 0; round < 5; round++) {
  rates.inProcess.push(await inProcess());
  rates.one.push(await throughGateway(1));
  rates.sixteen.push(await throughGateway(16));
}
await own.dispose();
await model.dispose();
await agent.stop();
await relay.stop();

console.log(`Machine: ${cpus()[0]?.model ?? "?"}, ${availableParallelism()} CPUs; Node ${process.version}\n`);
console.log("### What each API's codec adds (instant stand-in behind the gateway, one process)\n");
console.log("| API | non-streamed p50 (300, one at a time) | added to chat | first byte streamed p50 | added to chat | req/s at c=16 | gateway CPU per request | streamed req/s at c=16 | CPU per streamed request |");
console.log("|---|---|---|---|---|---|---|---|---|");
const chat = codecRows.chat;
for (const [name, r] of Object.entries(codecRows)) {
  const whole = median(r.whole);
  const first = median(r.first);
  console.log(
    `| ${name} | ${whole.toFixed(3)} ms | ${(whole - median(chat.whole)).toFixed(3)} ms | ${first.toFixed(3)} ms | ${(first - median(chat.first)).toFixed(3)} ms | ${median(r.load.map((x) => x.rps)).toFixed(0)} | ${median(r.load.map((x) => x.cpuMs)).toFixed(3)} ms | ${median(r.streamLoad.map((x) => x.rps)).toFixed(0)} | ${median(r.streamLoad.map((x) => x.cpuMs)).toFixed(3)} ms |`,
  );
}
console.log(`\n### Embeddings per second (${modelPath.split("/").at(-1)}, 1 thread, context ${contextSize}; 64 inputs of about 25 tokens; median of 5 alternating rounds)\n`);
console.log("| node-llama-cpp in-process | gateway, 1 input a request | gateway, 16 inputs a request |\n|---|---|---|");
const [a, b, c] = [median(rates.inProcess), median(rates.one), median(rates.sixteen)];
console.log(`| ${a.toFixed(0)} /s | ${b.toFixed(0)} /s (${((b / a) * 100).toFixed(0)}%) | ${c.toFixed(0)} /s (${((c / a) * 100).toFixed(0)}%) |`);
for (const child of children) child.kill("SIGTERM");
rmSync(dir, { recursive: true, force: true });
process.exit(0);
