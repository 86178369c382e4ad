#!/usr/bin/env node
// Benchmarks GGUF inference through the gateway on this machine with a real model (npm run bench runs it after bench-gateway.mjs).
// Measures, with the relay and agent in this process and the model in its own process as in production
// (and then node-llama-cpp in this process alone, on the same model and thread count, for comparison):
//   - gateway overhead: latency of a 1-token completion through the relay vs. straight to the model's process
//     (the agent's own client of the model process's socket, called in this process)
//   - time to first token and decode rate of a streamed 256-token completion
//   - aggregate decode rate of 8 concurrent streams
//   - resident memory of the relay+agent process and of the model process
// Model: MAKINA_BENCH_MODEL or ../shared/models/stories260K.gguf. Results go to stdout as a markdown table.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, cpus, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { resolveRelayConfig, startRelay } = await import(join(root, "dist/relay/index.js"));
const { resolveAgentConfig, startAgent } = await import(join(root, "dist/agent/index.js"));
const { silentLogger } = await import(join(root, "dist/proto/index.js"));

const model = resolve(process.env.MAKINA_BENCH_MODEL ?? join(root, "..", "shared", "models", "stories260K.gguf"));
const dir = mkdtempSync(join(tmpdir(), "makina-bench-"));
const log = silentLogger();
const relay = await startRelay(resolveRelayConfig({ flags: { dataDir: dir, port: 0, grpcPort: 0, grpcHost: "127.0.0.1" } }), { log });
const org = await relay.control.createOrg("bench");
const { machine, token } = await relay.control.createMachine(org.id, "bench");
// Relay and agent in one process, linked in-process, as `makina up` runs them.
const agent = await startAgent(resolveAgentConfig({ flags: { server: relay.linkAddress, machineId: machine.id, token, dataDir: join(dir, "agent"), gpu: false, maxContextSize: 2048, parallelSequences: 8 } }), {
  log,
  dial: relay.inProcessDialer({ machineId: machine.id, token }),
});
await agent.link.whenOnline();
const stack = await relay.control.createStack({ org: org.id, name: "bench", machine: machine.id, runtime: "gguf", model, modelId: "bench" });
await relay.control.deploy(stack.id);
await relay.deployer.settled(stack.id);
const { key } = await relay.control.createKey(org.id, {});
const runtime = agent.host.list()[0];

const body = (extra) => JSON.stringify({ model: "bench", messages: [{ role: "user", content: "Once upon a time" }], temperature: 0, ...extra });
const viaGateway = (extra) =>
  fetch(`${relay.url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: body(extra) });
const modelProcess = agent.host.runtime(stack.id);
const input = { messages: [{ role: "user", content: "Once upon a time" }], temperature: 0, topP: 1, stop: [], presencePenalty: 0, frequencyPenalty: 0, stream: true };
const direct = async (extra) => {
  for await (const _ of modelProcess.chat({ ...input, maxTokens: extra.max_tokens })) void _;
  return { text: async () => "" };
};

const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
async function latency(send, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const r = await send({ max_tokens: 1 });
    await r.text();
    out.push(performance.now() - t);
  }
  return out;
}
async function stream(tokens) {
  const t0 = performance.now();
  const res = await viaGateway({ max_tokens: tokens, stream: true, stream_options: { include_usage: true } });
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let first = 0;
  let text = "";
  let completion = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (!first && text.includes('"content":"') && /"content":"[^"]/.test(text)) first = performance.now() - t0;
  }
  const usage = /"completion_tokens":(\d+)/.exec(text.slice(text.lastIndexOf('"usage"')));
  completion = Number(usage?.[1] ?? 0);
  const total = performance.now() - t0;
  return { ttft: first, total, completion, rate: completion / ((total - first) / 1000) };
}
const median = (xs) => pct(xs, 50);
const rss = (pid) => Number(execFileSync("ps", ["-o", "rss=", "-p", String(pid)], { encoding: "utf8" }).trim()) * 1024;
const mib = (b) => `${(b / 2 ** 20).toFixed(0)} MiB`;

await latency(viaGateway, 5);
await latency(direct, 5);
const gw = await latency(viaGateway, 100);
const dr = await latency(direct, 100);
// node-llama-cpp in this process, on the same model and thread count, measured in rounds that alternate with
// the gateway's (so both see the same machine at the same moments): how much of the decode rate survives the
// trip through the gateway. Each pair's ratio is taken, and the median of those is reported.
const threads = agent.config.threads;
const { createLlama } = await import(join(root, "dist/agent/runtimes/gguf/gguf-engine.js"));
const { loadGgufModel } = await import(join(root, "dist/agent/runtimes/gguf/gguf-runtime.js"));
const llama = await createLlama({ threads, gpu: false, log });
const inProcess = await loadGgufModel(llama, model, { maxContextSize: 2048, sequences: 1, threads });
async function localStream(tokens) {
  const t0 = performance.now();
  let first = 0;
  let completion = 0;
  for await (const ev of inProcess.chat({ ...input, maxTokens: tokens })) {
    if (ev.type === "text" && !first) first = performance.now() - t0;
    if (ev.type === "end") completion = ev.usage.completionTokens;
  }
  return completion / ((performance.now() - t0 - first) / 1000);
}
const streams = [];
const local = [];
const ratios = [];
for (let i = 0; i < 8; i++) {
  const g = await stream(256);
  const l = await localStream(256);
  if (i === 0) continue;
  streams.push(g);
  local.push(l);
  ratios.push(g.rate / l);
}
await inProcess.close();
const t = performance.now();
const parallel = await Promise.all(Array.from({ length: 8 }, () => stream(128)));
const parallelSecs = (performance.now() - t) / 1000;
const parallelTokens = parallel.reduce((n, s) => n + s.completion, 0);
const gatewayRss = process.memoryUsage().rss;
const modelRss = rss(runtime.pid);
await agent.stop();
const gatewayRate = median(streams.map((s) => s.rate));
const localRate = median(local);

const rows = [
  ["1-token completion through the gateway (p50 / p95)", `${median(gw).toFixed(1)} ms / ${pct(gw, 95).toFixed(1)} ms`],
  ["1-token completion straight to the model's process (p50 / p95)", `${median(dr).toFixed(1)} ms / ${pct(dr, 95).toFixed(1)} ms`],
  ["gateway overhead (p50 difference)", `${(median(gw) - median(dr)).toFixed(1)} ms`],
  ["time to first token, streamed (median of 7)", `${median(streams.map((s) => s.ttft)).toFixed(1)} ms`],
  ["decode rate, one 256-token stream through the gateway (median of 7)", `${gatewayRate.toFixed(0)} tokens/s`],
  ["decode rate, node-llama-cpp in-process, same model and threads (median of 7, alternating)", `${localRate.toFixed(0)} tokens/s`],
  ["through the gateway / in-process (median of the 7 pairs' ratios)", `${(median(ratios) * 100).toFixed(0)}%`],
  ["aggregate decode rate, 8 concurrent 128-token streams", `${(parallelTokens / parallelSecs).toFixed(0)} tokens/s`],
  ["resident memory: relay + agent process", mib(gatewayRss)],
  ["resident memory: model process", mib(modelRss)],
];
console.log(`Machine: ${cpus()[0]?.model ?? "?"}, ${availableParallelism()} CPUs; model ${model.split("/").pop()}; threads ${threads}; Node ${process.version}\n`);
console.log("| measure | result |\n|---|---|");
for (const [k, v] of rows) console.log(`| ${k} | ${v} |`);

await relay.stop();
rmSync(dir, { recursive: true, force: true });
