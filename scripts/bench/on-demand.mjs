#!/usr/bin/env node
// Models loaded on demand (issue 42), measured on the real GGUF test models, with the gateway in its own process
// (scripts/bench/on-demand-gateway-process.mjs) and the client here (node:http, keep-alive). Three questions:
//   cold start  a 1-token request to an unloaded stack (unloaded again before each, through the admin API), against
//               the same request once loaded: the difference is what the client waits for the load; against it,
//               node-llama-cpp's own load (loadModel and its context, the same options) in this process, in
//               alternating rounds
//   swap        1-token requests alternating between two models, with `--max-loaded 1` (each request unloads the
//               other model and loads its own) and with both loaded
//   warm        a loaded on-demand stack against an always stack of the same model, alternating: what on demand
//               costs a request once the model is in memory
// Knobs: MAKINA_BENCH_ROUNDS (cold starts, default 12), MAKINA_BENCH_REQUESTS (per way for swap and warm, default 300),
// MAKINA_BENCH_JSON (also write the results there).
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { children, pct, start } from "./bench-children.mjs";

const here = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const models = join(here, "..", "shared", "models");
const ROUNDS = Number(process.env.MAKINA_BENCH_ROUNDS ?? 12);
const REQUESTS = Number(process.env.MAKINA_BENCH_REQUESTS ?? 300);
const dir = mkdtempSync(join(tmpdir(), "makina-bench-on-demand-"));
const p50 = (xs) => pct(xs, 50);
const ms = (x) => `${x.toFixed(1)} ms`;
/** Each stack a file of its own (the page cache holds them all: a load reads from memory, as a machine's second load does). */
const copy = (name, source) => {
  const path = join(dir, `${name}.gguf`);
  copyFileSync(join(models, source), path);
  return path;
};
const a = copy("a", "stories260K.gguf");
const aAlways = copy("a-always", "stories260K.gguf");
const b = copy("b", "llama-2-tiny-random.gguf");

const http = new Agent({ keepAlive: true, maxSockets: 8 });
/** One HTTP call; resolves with the status, the body and the time it took. */
function call(url, { method = "POST", token, body } = {}) {
  return new Promise((resolveCall, reject) => {
    const t0 = performance.now();
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = request(url, { method, agent: http, headers: { authorization: `Bearer ${token}`, ...(data ? { "content-type": "application/json", "content-length": Buffer.byteLength(data) } : {}) } }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolveCall({ status: res.statusCode, body: Buffer.concat(chunks).toString(), ms: performance.now() - t0 }));
    });
    req.on("error", reject);
    req.end(data);
  });
}
const chat = async (gw, model) => {
  const r = await call(`${gw.url}/v1/chat/completions`, { token: gw.key, body: { model, messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 1, temperature: 0 } });
  if (r.status !== 200) throw new Error(`${model} answered ${r.status}: ${r.body.slice(0, 300)}`);
  return r.ms;
};
const admin = async (gw, stackId, action) => {
  const r = await call(`${gw.adminUrl}/admin/v1/stacks/${stackId}/${action}`, { token: gw.adminToken });
  if (r.status !== 200) throw new Error(`${action} answered ${r.status}: ${r.body.slice(0, 300)}`);
};
const gateway = async (name, maxLoaded, stacks) => {
  const { child, msg } = await start("scripts/bench/on-demand-gateway-process.mjs", [join(dir, name), String(maxLoaded), ...stacks], "url");
  return { ...msg, child };
};
const stop = async (gw) => {
  gw.child.kill("SIGTERM");
  await new Promise((r) => gw.child.once("exit", r));
};

/** `n` requests alternating between the models, after a warm-up: each model's times, and requests per second overall. */
async function alternate(gw, names, n) {
  for (let i = 0; i < 20; i++) await chat(gw, names[i % names.length]);
  const times = Object.fromEntries(names.map((m) => [m, []]));
  const t0 = performance.now();
  for (let i = 0; i < n * names.length; i++) {
    const m = names[i % names.length];
    times[m].push(await chat(gw, m));
  }
  return { times, rps: (n * names.length) / ((performance.now() - t0) / 1000) };
}

try {
  // One gateway, no limit: an always stack and two on-demand ones.
  const gw = await gateway("open", 0, [`always=always=${aAlways}`, `a=on_demand=${a}`, `b=on_demand=${b}`]);
  const { createLlama } = await import(join(here, "dist/agent/runtimes/gguf/gguf-engine.js"));
  const { loadGgufModel } = await import(join(here, "dist/agent/runtimes/gguf/gguf-runtime.js"));
  const { silentLogger } = await import(join(here, "dist/proto/index.js"));
  const llama = await createLlama({ threads: gw.threads, gpu: false, log: silentLogger() });
  const cold = [];
  const warm = [];
  const inProcess = [];
  await chat(gw, "a");
  for (let round = 0; round < ROUNDS; round++) {
    await admin(gw, gw.stacks.a, "unload");
    cold.push(await chat(gw, "a"));
    for (let i = 0; i < 5; i++) warm.push(await chat(gw, "a"));
    const t0 = performance.now();
    const runtime = await loadGgufModel(llama, a, { maxContextSize: 2048, sequences: 8, threads: gw.threads });
    inProcess.push(performance.now() - t0);
    await runtime.close();
  }
  const wait = p50(cold) - p50(warm);
  const both = await alternate(gw, ["a", "b"], REQUESTS);
  const steady = await alternate(gw, ["always", "a"], REQUESTS);
  await stop(gw);
  // The same two models with room for one.
  const tight = await gateway("tight", 1, [`a=on_demand=${a}`, `b=on_demand=${b}`]);
  const swap = await alternate(tight, ["a", "b"], Math.max(20, Math.round(REQUESTS / 10)));
  await stop(tight);

  const results = {
    cold: { requestP50: p50(cold), warmP50: p50(warm), waitP50: wait, inProcessLoadP50: p50(inProcess), ratio: wait / p50(inProcess), rounds: ROUNDS },
    swap: { maxLoaded1: { rps: swap.rps, p50: p50([...swap.times.a, ...swap.times.b]) }, bothLoaded: { rps: both.rps, p50: p50([...both.times.a, ...both.times.b]) } },
    warm: { alwaysP50: p50(steady.times.always), onDemandP50: p50(steady.times.a), alwaysP95: pct(steady.times.always, 95), onDemandP95: pct(steady.times.a, 95) },
  };
  const rows = [
    ["cold start: a 1-token request to an unloaded stack (p50)", ms(results.cold.requestP50)],
    ["  the same request, loaded (p50)", ms(results.cold.warmP50)],
    ["  what the client waits for the load (the difference)", ms(results.cold.waitP50)],
    ["  node-llama-cpp's loadModel + context in-process (p50)", ms(results.cold.inProcessLoadP50)],
    ["  wait / in-process load", `${results.cold.ratio.toFixed(2)}×`],
    ["swap, --max-loaded 1: alternating two models, req/s / p50", `${results.swap.maxLoaded1.rps.toFixed(1)} / ${ms(results.swap.maxLoaded1.p50)}`],
    ["  both loaded: req/s / p50", `${results.swap.bothLoaded.rps.toFixed(1)} / ${ms(results.swap.bothLoaded.p50)}`],
    ["warm 1-token request: always / on demand, p50", `${ms(results.warm.alwaysP50)} / ${ms(results.warm.onDemandP50)}`],
    ["  p95", `${ms(results.warm.alwaysP95)} / ${ms(results.warm.onDemandP95)}`],
  ];
  console.log("\nModels loaded on demand (GGUF test models; gateway in its own process)");
  for (const [k, v] of rows) console.log(`  ${k.padEnd(62)} ${v}`);
  if (process.env.MAKINA_BENCH_JSON) writeFileSync(resolve(process.env.MAKINA_BENCH_JSON), JSON.stringify(results, null, 2));
} finally {
  for (const c of children) c.kill("SIGTERM");
  http.destroy();
  rmSync(dir, { recursive: true, force: true });
}
