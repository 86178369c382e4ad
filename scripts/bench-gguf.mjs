#!/usr/bin/env node
// GGUF tokens through the gateway against the same model without it (npm run bench runs it after bench-gateway.mjs).
// Four processes, as a user's setup has them: this one is the client (node:http with a keep-alive agent); the
// gateway (relay and agent linked in-process, as `makina up` runs them; scripts/bench/gguf-gateway-process.mjs);
// the model's own process, which the agent supervises; and for the reference, node-llama-cpp loaded in this
// process on the same model, context, sequences and threads. Three ways to the same tokens, measured in
// alternating rounds so that each sees the same machine at the same moments:
//   gateway      HTTP to the gateway, streamed (SSE) or not
//   direct       the agent's own client of the model process's socket (GgufProcessRuntime), called from this
//                process: what the model process and its socket cost, without relay, link and HTTP
//   in-process   node-llama-cpp in this process (the physical limit)
// Like with like: streamed against streamed, a whole 1-token answer against a whole 1-token answer.
// CPU per streamed token comes from the scheduler's count (schedstat, see cpuMs) of the gateway process and of the model process. Then, in a
// gateway of its own, each request's stages are timed inside the gateway (MAKINA_BENCH_STAGES, see
// scripts/bench/gguf-gateway-process.mjs) and matched with the client's times by the response's x-request-id.
// Knobs: MAKINA_BENCH_MODEL (default ../shared/models/stories260K.gguf), MAKINA_BENCH_ROOT (measure another
// checkout's built dist/, e.g. the tree before a change), MAKINA_BENCH_JSON (also write the results there),
// MAKINA_BENCH_STREAM_INTERVAL_MS (the agent's MAKINA_AGENT_STREAM_INTERVAL_MS; default: the agent's own),
// MAKINA_BENCH_WARMUP (requests each way serves before it is measured, default 3000: see the warm-up below),
// MAKINA_BENCH_CPU_PROFILE=DIR (instead of the measures: profile the gateway and the model process as
// `--cpu-prof` does (scripts/bench/cpu-prof-preload.cjs), stream and answer through the gateway, and print where their CPU went by stage).
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { connect } from "node:net";
import { availableParallelism, cpus, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { children, cpuMs, pct, start } from "./bench/bench-children.mjs";
import { profileStages } from "./bench/profile-stages.mjs";

const here = join(dirname(fileURLToPath(import.meta.url)), "..");
const root = process.env.MAKINA_BENCH_ROOT ? resolve(process.env.MAKINA_BENCH_ROOT) : here;
const model = resolve(process.env.MAKINA_BENCH_MODEL ?? join(here, "..", "shared", "models", "stories260K.gguf"));
/** Requests each way serves before it is measured (MAKINA_BENCH_WARMUP). */
const WARMUP = Number(process.env.MAKINA_BENCH_WARMUP ?? 3000);
const profileDir = process.env.MAKINA_BENCH_CPU_PROFILE ? resolve(process.env.MAKINA_BENCH_CPU_PROFILE) : undefined;
const dir = mkdtempSync(join(tmpdir(), "makina-bench-gguf-"));
const median = (xs) => pct(xs, 50);
const rssMiB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024;

/** Starts the gateway process (with `profileTo`: it and the model process it starts write their CPU profiles there). */
async function gateway(name, { profileTo, stages } = {}) {
  const preload = join(here, "scripts", "bench", "cpu-prof-preload.cjs");
  const env = { MAKINA_BENCH_ROOT: root, ...(profileTo ? { NODE_OPTIONS: `--require ${preload}`, BENCH_CPU_PROF_DIR: profileTo } : {}), ...(stages ? { MAKINA_BENCH_STAGES: "1" } : {}) };
  const { child, msg, next } = await start("scripts/bench/gguf-gateway-process.mjs", [join(dir, name), model], "url", env);
  return { ...msg, pid: child.pid, child, next };
}

const http = new Agent({ keepAlive: true, maxSockets: 16 });
const chat = (extra) => JSON.stringify({ model: "bench", messages: [{ role: "user", content: "Once upon a time" }], temperature: 0, ...extra });

/**
 * One request through the gateway. Resolves with the time to the first text (streamed: the first chunk that
 * carries content; not streamed: the whole answer), the time to the end, and the completion tokens it reports.
 */
function viaGateway(gw, extra) {
  const body = chat(extra);
  return new Promise((resolveRequest, reject) => {
    const t0 = performance.now();
    let first = 0;
    const chunks = [];
    const at = (t) => performance.timeOrigin + t;
    const req = request(`${gw.url}/v1/chat/completions`, { method: "POST", agent: http, headers: { authorization: `Bearer ${gw.key}`, "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (res) => {
      res.setEncoding("utf8");
      res.on("data", (s) => {
        if (!first && /"content":"[^"]/.test(s)) first = performance.now();
        chunks.push(s);
      });
      res.on("end", () => {
        const end = performance.now();
        const text = chunks.join("");
        if (res.statusCode !== 200) return reject(new Error(`gateway answered ${res.statusCode}: ${text.slice(0, 300)}`));
        const completion = Number(/"completion_tokens":(\d+)/.exec(text.slice(text.lastIndexOf('"usage"')))?.[1] ?? 0);
        // Streamed: the events that carry text (each a frame from the model process).
        const frames = text.match(/"content":"[^"]/g)?.length ?? 0;
        // With the absolute times and the request's id, for the stages measured inside the gateway.
        resolveRequest({ ttft: (first || end) - t0, total: end - t0, completion, frames, rate: completion / ((end - (first || end)) / 1000), id: res.headers["x-request-id"], sent: at(t0), firstAt: at(first || end), endAt: at(end) });
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

const input = (maxTokens, stream) => ({ messages: [{ role: "user", content: "Once upon a time" }], temperature: 0, topP: 1, stop: [], presencePenalty: 0, frequencyPenalty: 0, stream, maxTokens });

/** One request to a runtime's `chat` (the model process's socket, or node-llama-cpp in this process), timed as above. */
async function viaRuntime(runtime, maxTokens, stream) {
  const t0 = performance.now();
  let first = 0;
  let completion = 0;
  for await (const ev of runtime.chat(input(maxTokens, stream))) {
    if (ev.type === "text" && !first && stream) first = performance.now();
    if (ev.type === "end") completion = ev.usage.completionTokens;
  }
  const end = performance.now();
  return { ttft: (first || end) - t0, total: end - t0, completion, rate: completion / ((end - (first || end)) / 1000) };
}

/** n requests at once: each one's result, and their aggregate decode rate (tokens of all of them over the wall time). */
async function concurrent(n, one) {
  const t0 = performance.now();
  const all = await Promise.all(Array.from({ length: n }, one));
  return Object.assign(all, { rate: all.reduce((sum, r) => sum + r.completion, 0) / ((performance.now() - t0) / 1000) });
}

const { GgufProcessRuntime } = await import(join(root, "dist/agent/runtimes/gguf/gguf-process-runtime.js"));
const direct = (gw) => new GgufProcessRuntime({ socketPath: gw.socket, contextSize: gw.contextSize, supervisor: { state: "ready", pid: gw.modelPid, stop: async () => {} } });

/**
 * The floor: a bare node:http relay and a stand-in model process (scripts/bench/bare-hop.mjs), with none of
 * Makina's code: what any relay in Node adds on this machine, its HTTP hop and its one more process.
 */
async function bareHop() {
  const socketPath = join(dir, "bare.sock");
  await start("scripts/bench/bare-hop.mjs", ["model", socketPath], "socket");
  const relay = await start("scripts/bench/bare-hop.mjs", ["relay", socketPath], "url");
  const raw = await start("scripts/bench/bare-hop.mjs", ["raw", socketPath], "port");
  /** A kept connection that resolves `answered` at each end frame. */
  const kept = async (...to) => {
    const conn = connect(...to);
    await new Promise((r) => conn.once("connect", r));
    conn.setNoDelay(true);
    conn.setEncoding("utf8");
    conn.on("data", (chunk) => chunk.includes('"end"') && conn.answered());
    return conn;
  };
  const conn = await kept(socketPath);
  const rawConn = await kept(raw.msg.port, "127.0.0.1");
  const line = (c, text) => new Promise((r) => ((c.answered = r), c.write(`${text}\n`)));
  const ask = (frames, intervalMs = 0) => JSON.stringify({ ...JSON.parse(chat({ max_tokens: 1 })), frames, intervalMs });
  const timed = (run) => async () => {
    const t0 = performance.now();
    await run();
    return { total: performance.now() - t0 };
  };
  const post = (body) =>
    new Promise((resolvePost, reject) => {
      const req = request(`${relay.msg.url}/`, { method: "POST", agent: http, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (res) => {
        res.resume();
        res.on("end", resolvePost);
      });
      req.on("error", reject);
      req.end(body);
    });
  return {
    pid: relay.child.pid,
    /** A 1-token answer straight from the stand-in, over a kept connection. */
    direct: timed(() => line(conn, ask(0))),
    /** A 1-token answer through the raw TCP relay. */
    raw: timed(() => line(rawConn, ask(0))),
    /** A 1-token answer through the bare relay. */
    hop: timed(() => post(ask(0))),
    /** A stream of `frames` frames, one per `intervalMs`, through the bare relay. */
    stream: (frames, intervalMs) => post(ask(frames, intervalMs)),
    close: () => (conn.destroy(), rawConn.destroy()),
  };
}

async function stopGateway(gw) {
  const exited = new Promise((r) => gw.child.once("exit", r));
  gw.child.kill("SIGTERM");
  await exited;
}

if (profileDir) {
  // Where the CPU goes: the gateway and the model process under --cpu-prof, first while streaming (per token),
  // then while answering 1-token completions (per request). Profiling slows what it watches: the measures are
  // the runs without it.
  for (const phase of ["streams", "requests"]) {
    const out = join(profileDir, phase);
    rmSync(out, { recursive: true, force: true });
    mkdirSync(out, { recursive: true });
    const gw = await gateway(`profile-${phase}`, { profileTo: out });
    let units = 0;
    for (let i = 0; i < WARMUP; i++) await viaGateway(gw, { max_tokens: 1 });
    for (let i = 0; i < WARMUP / 20; i++) await viaGateway(gw, { max_tokens: 16, stream: true });
    process.kill(gw.pid, "SIGUSR2");
    process.kill(gw.modelPid, "SIGUSR2");
    await new Promise((r) => setTimeout(r, 100));
    if (phase === "streams") {
      for (let i = 0; i < 16; i++) units += (await viaGateway(gw, { max_tokens: 256, stream: true, stream_options: { include_usage: true } })).completion;
      for (let i = 0; i < 4; i++) {
        const all = await Promise.all(Array.from({ length: 8 }, () => viaGateway(gw, { max_tokens: 128, stream: true, stream_options: { include_usage: true } })));
        units += all.reduce((s, r) => s + r.completion, 0);
      }
    } else {
      for (let i = 0; i < 400; i++, units++) await viaGateway(gw, { max_tokens: 1 });
    }
    await stopGateway(gw);
    // The model process writes its profile as it exits, which the agent waits for.
    const files = readdirSync(out).filter((f) => f.endsWith(".cpuprofile"));
    const unit = phase === "streams" ? "token" : "request";
    console.log(`\n${phase === "streams" ? `Streaming (${units} tokens: 16 streams of 256, 4 × 8 concurrent of 128)` : `${units} one-token completions, not streamed`}: CPU µs per ${unit}, by stage\n`);
    for (const f of files) {
      const pid = Number(f.split(".")[0]);
      const who = pid === gw.pid ? "gateway (relay + agent)" : pid === gw.modelPid ? "model process" : `process ${pid}`;
      const { ms, busy } = profileStages(join(out, f));
      console.log(`${who}: ${((busy * 1000) / units).toFixed(1)} µs per ${unit} in all (${f})\n`);
      console.log(`| stage | µs per ${unit} | share |\n|---|---|---|`);
      for (const [stage, t] of Object.entries(ms).sort((a, b) => b[1] - a[1])) console.log(`| ${stage} | ${((t * 1000) / units).toFixed(1)} | ${((100 * t) / busy).toFixed(0)}% |`);
      console.log("");
    }
  }
  http.destroy();
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}

const gw = await gateway("run");
const socket = direct(gw);
const threads = gw.threads;
// The reference: node-llama-cpp in this process, loaded as the model process loads it.
const { createLlama } = await import(join(root, "dist/agent/runtimes/gguf/gguf-engine.js"));
const { loadGgufModel } = await import(join(root, "dist/agent/runtimes/gguf/gguf-runtime.js"));
const { silentLogger } = await import(join(root, "dist/proto/index.js"));
const llama = await createLlama({ threads, gpu: false, log: silentLogger() });
const inProcess = await loadGgufModel(llama, model, { maxContextSize: 2048, sequences: 8, threads });

const ways = {
  gateway: (tokens, stream) => viaGateway(gw, { max_tokens: tokens, ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}) }),
  direct: (tokens, stream) => viaRuntime(socket, tokens, stream),
  inProcess: (tokens, stream) => viaRuntime(inProcess, tokens, stream),
};
const names = Object.keys(ways);
/** Runs `round(way)` for each way (of `list`), `rounds` times, the order turning each round; the first round is a warm-up. */
async function alternate(rounds, round, list = names) {
  const out = Object.fromEntries(list.map((n) => [n, []]));
  for (let i = 0; i < rounds + 1; i++) {
    for (let j = 0; j < list.length; j++) {
      const name = list[(i + j) % list.length];
      const r = await round(name);
      if (i > 0) out[name].push(r);
    }
  }
  return out;
}

/** CPU ms of the gateway and the model process, and the requests and tokens they served meanwhile, by way and kind of round. */
const cpu = {};
/** Runs `run` and charges the CPU the gateway and the model process used meanwhile to `kind` of way `w`. */
async function charged(kind, w, run) {
  const before = [cpuMs(gw.pid), cpuMs(gw.modelPid)];
  const r = await run();
  const c = (cpu[`${kind} ${w}`] ??= { gateway: 0, model: 0, requests: 0, tokens: 0 });
  c.gateway += cpuMs(gw.pid) - before[0];
  c.model += cpuMs(gw.modelPid) - before[1];
  for (const x of [r].flat()) {
    c.requests++;
    c.tokens += x.completion;
  }
  return r;
}
const bare = await bareHop();
// A 1-token answer, not streamed (and the floor's, through the bare relay and straight to its stand-in), and the
// time to the first token of a streamed 32-token one.
const bareWays = { bareHop: bare.hop, bareRaw: bare.raw, bareDirect: bare.direct };
// Warm-up: a gateway that has served a while runs its path optimized (V8 compiles hot code after some thousands
// of calls); a few hundred requests leave the gateway's and the model process's CPU per request about 1.8 times
// higher. Every way serves as many first, streamed and not, so that each is measured as it runs in service.
for (let i = 0; i < WARMUP; i++) for (const w of names) await ways[w](1, false);
for (let i = 0; i < WARMUP / 20; i++) for (const w of names) await ways[w](32, true);
for (let i = 0; i < WARMUP; i++) for (const run of Object.values(bareWays)) await run();
const one = await alternate(150, (w) => (bareWays[w] ?? ((t) => ways[w](t, false)))(1), [...names, ...Object.keys(bareWays)]);
const ttft = await alternate(60, (w) => charged("short", w, () => ways[w](32, true)));
// One 256-token stream at a time.
const streams = await alternate(12, (w) => charged("long", w, () => ways[w](256, true)));
// Eight 128-token streams at once, on the model's eight sequences.
const eight = await alternate(9, (w) => charged("eight", w, () => concurrent(8, () => ways[w](128, true))));
const memory = { gateway: rssMiB(gw.pid), model: rssMiB(gw.modelPid) };
// CPU per frame, as the slope from short streams to long ones (what each further frame costs, the request's own
// cost aside): the gateway's from its 32- and 256-token streams, the bare relay's from streams of as many
// frames, at the agent's interval.
const { GGUF_FRAME_MS } = await import(join(root, "dist/agent/runtimes/gguf/gguf-wire.js"));
const frameMs = Number(process.env.MAKINA_BENCH_STREAM_INTERVAL_MS ?? GGUF_FRAME_MS ?? 32);
const framesOf = (runs) => runs.reduce((n, r) => n + r.frames, 0) / runs.length;
const frames = { long: framesOf(streams.gateway), short: framesOf(ttft.gateway) };
const bareUsPerRequest = async (n) => {
  await bare.stream(n, frameMs);
  const before = cpuMs(bare.pid);
  for (let i = 0; i < 20; i++) await bare.stream(n, frameMs);
  return ((cpuMs(bare.pid) - before) * 1000) / 20;
};
const bareLong = Math.max(2, Math.round(frames.long));
const bareShort = Math.max(1, Math.round(frames.short));
const bareUsPerFrame = ((await bareUsPerRequest(bareLong)) - (await bareUsPerRequest(bareShort))) / Math.max(1, bareLong - bareShort);
bare.close();
await inProcess.close();
await stopGateway(gw);
http.destroy();

// Where the time of one request goes, stage by stage: the gateway again, its stages timed inside it.
const staged = await gateway("stages", { stages: true });
const collect = async (run) => {
  const client = await run();
  process.kill(staged.pid, "SIGUSR2");
  const byId = new Map((await staged.next("stages")).stages.map((g) => [g.id, g]));
  return client.flat().map((r) => ({ r, g: byId.get(r.id) })).filter((x) => x.g);
};
const sequentially = async (n, run) => {
  const out = [];
  for (let i = 0; i < n; i++) out.push(await run());
  return out;
};
for (let i = 0; i < WARMUP; i++) await viaGateway(staged, { max_tokens: 1 });
for (let i = 0; i < WARMUP / 20; i++) await viaGateway(staged, { max_tokens: 16, stream: true });
const stageRuns = {
  one: await collect(() => sequentially(100, () => viaGateway(staged, { max_tokens: 1 }))),
  first: await collect(() => sequentially(100, () => viaGateway(staged, { max_tokens: 16, stream: true }))),
  eight: await collect(() => sequentially(10, () => Promise.all(Array.from({ length: 8 }, () => viaGateway(staged, { max_tokens: 32, stream: true }))))),
};
await stopGateway(staged);
const STAGES = [
  ["HTTP in: the client's request reaches the relay", ({ r, g }) => g.arrived - r.sent],
  ["relay: key, body, validation, plan, limits, admission", ({ g }) => g.infer - g.arrived],
  ["the link, to the agent's dispatcher", ({ g }) => g.dispatch - g.infer],
  ["agent: dispatch, to the model process's client", ({ g }) => g.runtime - g.dispatch],
  ["model process: its socket, the prompt, the first token", ({ g }) => g.first - g.runtime],
  ["the first token back: link, relay, HTTP out to the client (streamed)", ({ r, g }) => r.firstAt - g.first, "streamed"],
  ["model process: the rest of the answer (not streamed)", ({ g }) => g.end - g.first, "whole"],
  ["the answer back: link, relay, written (not streamed)", ({ g }) => g.finished - g.end, "whole"],
  ["HTTP out: to the client's last byte (not streamed)", ({ r, g }) => r.endAt - g.finished, "whole"],
  ["in all: to the whole answer (not streamed) or the first token (streamed)", ({ r }, kind) => (kind === "whole" ? r.endAt : r.firstAt) - r.sent],
];
const stageTable = STAGES.map(([name, f, only]) => [
  name,
  ...[
    ["one", "whole"],
    ["first", "streamed"],
    ["eight", "streamed"],
  ].map(([run, kind]) => (only && only !== kind ? "" : `${median(stageRuns[run].map((x) => f(x, kind))).toFixed(2)} ms`)),
]);

const ratios = (a, b) => median(a.map((x, i) => x / b[i]));
const rate = (w) => streams[w].map((s) => s.rate);
const results = {
  machine: `${cpus()[0]?.model ?? "?"}, ${availableParallelism()} CPUs`,
  node: process.version,
  model: model.split("/").pop(),
  threads,
  oneToken: Object.fromEntries(names.map((w) => [w, { p50: median(one[w].map((r) => r.total)), p95: pct(one[w].map((r) => r.total), 95) }])),
  ttft: Object.fromEntries(names.map((w) => [w, median(ttft[w].map((r) => r.ttft))])),
  rate: Object.fromEntries(names.map((w) => [w, median(rate(w))])),
  rateRatio: { gateway: ratios(rate("gateway"), rate("inProcess")), direct: ratios(rate("direct"), rate("inProcess")) },
  eight: Object.fromEntries(names.map((w) => [w, median(eight[w].map((e) => e.rate))])),
  eightRatio: { gateway: ratios(eight.gateway.map((e) => e.rate), eight.inProcess.map((e) => e.rate)), direct: ratios(eight.direct.map((e) => e.rate), eight.inProcess.map((e) => e.rate)) },
  cpu: Object.fromEntries(Object.entries(cpu).map(([k, c]) => [k, { gatewayUsPerToken: (1000 * c.gateway) / c.tokens, modelUsPerToken: (1000 * c.model) / c.tokens, gatewayMsPerRequest: c.gateway / c.requests, tokensPerRequest: c.tokens / c.requests }])),
  // What one more token costs the gateway: the slope between the 32- and the 256-token streams' CPU per request.
  gatewayUsPerMoreToken: (1000 * (cpu["long gateway"].gateway / cpu["long gateway"].requests - cpu["short gateway"].gateway / cpu["short gateway"].requests)) / (cpu["long gateway"].tokens / cpu["long gateway"].requests - cpu["short gateway"].tokens / cpu["short gateway"].requests),
  memoryMiB: memory,
  floor: {
    oneToken: { hop: median(one.bareHop.map((r) => r.total)), raw: median(one.bareRaw.map((r) => r.total)), direct: median(one.bareDirect.map((r) => r.total)) },
    frameMs,
    frames,
    gatewayUsPerFrame: (1000 * (cpu["long gateway"].gateway / cpu["long gateway"].requests - cpu["short gateway"].gateway / cpu["short gateway"].requests)) / (frames.long - frames.short),
    bareUsPerFrame,
  },
  stages: stageTable,
};
if (process.env.MAKINA_BENCH_JSON) writeFileSync(process.env.MAKINA_BENCH_JSON, JSON.stringify(results, null, 2));

const ms = (x) => `${x.toFixed(2)} ms`;
const pctOf = (x) => `${(x * 100).toFixed(1)}%`;
const o = results.oneToken;
const rows = [
  ["1-token completion, not streamed: gateway (p50 / p95)", `${ms(o.gateway.p50)} / ${ms(o.gateway.p95)}`],
  ["1-token completion, not streamed: straight to the model's process (p50 / p95)", `${ms(o.direct.p50)} / ${ms(o.direct.p95)}`],
  ["1-token completion, not streamed: node-llama-cpp in-process (p50 / p95)", `${ms(o.inProcess.p50)} / ${ms(o.inProcess.p95)}`],
  ["gateway's added time, 1-token completion (p50 difference to the model's process)", ms(o.gateway.p50 - o.direct.p50)],
  ["the floor, with no Makina code: 1-token answer through a bare node:http relay / straight to its stand-in model process (p50)", `${ms(results.floor.oneToken.hop)} / ${ms(results.floor.oneToken.direct)}`],
  ["the floor's added time: an HTTP hop and one more process, on this machine (p50 difference)", ms(results.floor.oneToken.hop - results.floor.oneToken.direct)],
  ["the least any relay process adds: a raw TCP relay passing lines, no HTTP (p50 difference to the stand-in straight)", ms(results.floor.oneToken.raw - results.floor.oneToken.direct)],
  ["gateway's added time beyond the floor's (1-token completion)", ms(o.gateway.p50 - o.direct.p50 - (results.floor.oneToken.hop - results.floor.oneToken.direct))],
  ["time to first token, streamed: gateway / model's process / in-process (p50)", `${ms(results.ttft.gateway)} / ${ms(results.ttft.direct)} / ${ms(results.ttft.inProcess)}`],
  ["gateway's added time to first token (p50 difference to the model's process)", ms(results.ttft.gateway - results.ttft.direct)],
  ["decode rate, one 256-token stream: gateway / model's process / in-process (median of 12)", `${results.rate.gateway.toFixed(0)} / ${results.rate.direct.toFixed(0)} / ${results.rate.inProcess.toFixed(0)} tokens/s`],
  ["streamed decode rate, gateway / in-process (median of 12 rounds' ratios)", pctOf(results.rateRatio.gateway)],
  ["streamed decode rate, model's process / in-process (median of 12 rounds' ratios)", pctOf(results.rateRatio.direct)],
  ["aggregate of 8 concurrent 128-token streams: gateway / model's process / in-process (median of 9)", `${results.eight.gateway.toFixed(0)} / ${results.eight.direct.toFixed(0)} / ${results.eight.inProcess.toFixed(0)} tokens/s`],
  ["8-stream aggregate, gateway / in-process with 8 sequences (median of 9 rounds' ratios)", pctOf(results.eightRatio.gateway)],
  ["gateway process's CPU (relay + agent) per streamed token: one 256-token stream / 8 at once (all it used, over the tokens)", `${results.cpu["long gateway"].gatewayUsPerToken.toFixed(1)} µs / ${results.cpu["eight gateway"].gatewayUsPerToken.toFixed(1)} µs`],
  ["gateway process's CPU per request, 32-token stream / 256-token stream", `${results.cpu["short gateway"].gatewayMsPerRequest.toFixed(2)} ms / ${results.cpu["long gateway"].gatewayMsPerRequest.toFixed(2)} ms`],
  ["gateway process's CPU for each further token of a stream (slope from 32 to 256 tokens)", `${results.gatewayUsPerMoreToken.toFixed(1)} µs`],
  [`CPU for each further frame of a stream (${results.floor.frameMs} ms apart; slope from ${results.floor.frames.short.toFixed(1)} to ${results.floor.frames.long.toFixed(1)} frames): gateway process / the bare relay`, `${results.floor.gatewayUsPerFrame.toFixed(0)} µs / ${results.floor.bareUsPerFrame.toFixed(0)} µs`],
  ["model process's CPU per streamed token, through the gateway / straight", `${results.cpu["long gateway"].modelUsPerToken.toFixed(0)} µs / ${results.cpu["long direct"].modelUsPerToken.toFixed(0)} µs`],
  ["resident memory: gateway process / model process", `${memory.gateway.toFixed(0)} MiB / ${memory.model.toFixed(0)} MiB`],
];
console.log(`Machine: ${results.machine}; model ${results.model}; threads ${threads}; Node ${process.version}${root === here ? "" : `; tree ${root}`}\n`);
console.log("| measure | result |\n|---|---|");
for (const [k, v] of rows) console.log(`| ${k} | ${v} |`);
console.log("\nWhere one request's time goes, stage by stage (p50 of each stage; measured inside the gateway in a run of its own):\n");
console.log("| stage | 1-token answer, not streamed (100 one at a time) | first token, streamed (100 one at a time) | first token, 8 streams at once (10 rounds) |\n|---|---|---|---|");
for (const row of stageTable) console.log(`| ${row.join(" | ")} |`);
for (const c of children) c.kill();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
