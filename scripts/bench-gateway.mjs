#!/usr/bin/env node
// What the gateway itself costs, measured side by side (npm run bench runs it after building).
// An instant OpenAI-compatible stand-in (scripts/bench/instant-openai-server.mjs) answers at once in its
// own process; autocannon (in this process) calls it directly and through the gateway (relay → link →
// agent → stand-in, an `openai`-kind stack), in interleaved rounds, at concurrency 1, 16 and 64,
// non-streamed and streamed. The gateway runs as one process (relay and agent together, as `makina up`)
// and as two (relay, agent). CPU per request comes from the scheduler (bench-children.mjs cpuMs) for the gateway's processes.
// The floor (issue 47): a bare node:http pass-through proxy (scripts/bench/bare-proxy.mjs) in front of the same
// stand-in, measured in the same rounds; each of the gateway's figures is also given as a ratio to the floor's.
// Knobs: MAKINA_BENCH_SECONDS (per round, default 3), MAKINA_BENCH_CHUNKS (streamed chunks, default 16),
// MAKINA_BENCH_MODES (one,separate), MAKINA_BENCH_JSON (also write the results there as JSON),
// MAKINA_BENCH_APART=1 (the stand-in writes a stream's chunks apart, one a turn of its event loop, as a server
// generating tokens does: the floor's per-chunk cost is then a read and a write per chunk too), MAKINA_BENCH_PEER=1 (also measure Portkey's open-source Node gateway doing the same job; install it first
// with `npm --prefix scripts/bench/peer ci`, which pins it with the hono versions it needs).
import autocannon from "autocannon";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { children, cpuMs, pct, start } from "./bench/bench-children.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const seconds = Number(process.env.MAKINA_BENCH_SECONDS ?? 3);
const chunks = Number(process.env.MAKINA_BENCH_CHUNKS ?? 16);
const modes = (process.env.MAKINA_BENCH_MODES ?? "one,separate").split(",");
const dir = mkdtempSync(join(tmpdir(), "makina-bench-gw-"));

const rssMiB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024;

const body = (stream, n = chunks) =>
  JSON.stringify({ model: "instant", messages: [{ role: "user", content: "Say hello." }], ...(stream ? { stream: true, stream_options: { include_usage: true }, max_tokens: n } : {}) });

async function load(url, key, connections, stream, pids, n = chunks, extraHeaders = {}) {
  const before = pids.map(cpuMs);
  const r = await autocannon({
    url: `${url}/v1/chat/completions`,
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}), ...extraHeaders },
    body: body(stream, n),
    connections,
    duration: seconds,
  });
  const cpu = pids.map((pid, i) => cpuMs(pid) - before[i]);
  const ok = r.requests.total - r.non2xx;
  if (r.non2xx || r.errors) process.stderr.write(`  warning: ${r.non2xx} non-2xx, ${r.errors} errors (${url}, c=${connections})\n`);
  return { rps: ok / seconds, p50: r.latency.p50, p99: r.latency.p99, cpuMsPerRequest: cpu.reduce((a, b) => a + b, 0) / Math.max(1, ok), requests: ok };
}

/**
 * Sequential requests timed to the microsecond (autocannon reports whole milliseconds): p50 of the time to
 * the whole non-streamed answer, and of the time to the first byte of a streamed one.
 */
async function sequential(url, key, n = 300) {
  const whole = [];
  const first = [];
  const headers = { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) };
  for (let i = 0; i < n; i++) {
    let t = performance.now();
    await (await fetch(`${url}/v1/chat/completions`, { method: "POST", headers, body: body(false) })).arrayBuffer();
    whole.push(performance.now() - t);
    t = performance.now();
    const res = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers, body: body(true) });
    const reader = res.body.getReader();
    await reader.read();
    first.push(performance.now() - t);
    while (!(await reader.read()).done);
  }
  return { p50: pct(whole, 50), firstByte: pct(first, 50) };
}

const { msg: standin, child: standinChild } = await start("scripts/bench/instant-openai-server.mjs", ["0", String(chunks)], "port", { STANDIN_APART: process.env.MAKINA_BENCH_APART === "1" ? "1" : "0" });
const direct = `http://127.0.0.1:${standin.port}`;
const { msg: floorMsg, child: floorChild } = await start("scripts/bench/bare-proxy.mjs", [direct], "port");
const floor = `http://127.0.0.1:${floorMsg.port}`;
const results = { machine: `${cpus()[0]?.model ?? "?"}, ${availableParallelism()} CPUs`, node: process.version, seconds, chunks, modes: {} };

for (const mode of modes) {
  let gateway;
  let pids;
  if (mode === "one") {
    const { child, msg } = await start("scripts/bench/gateway-process.mjs", ["one", join(dir, mode), `${direct}/v1`], "url", { MAKINA_BENCH_LOG_FILE: join(dir, "one.log") });
    gateway = msg;
    pids = [child.pid];
  } else {
    const relay = await start("scripts/bench/gateway-process.mjs", ["relay", join(dir, mode), `${direct}/v1`], "joining", { MAKINA_BENCH_LOG_FILE: join(dir, "relay.log") });
    const { server, machineId, token } = relay.msg.joining;
    const agent = await start("scripts/bench/gateway-process.mjs", ["agent", join(dir, mode), server, machineId, token], "ready", { MAKINA_BENCH_LOG_FILE: join(dir, "agent.log") });
    gateway = await new Promise((resolve) => createInterface({ input: relay.child.stdout }).on("line", (l) => "url" in JSON.parse(l) && resolve(JSON.parse(l))));
    pids = [relay.child.pid, agent.child.pid];
  }
  const idleRss = pids.map(rssMiB);
  const rows = [];
  for (const stream of [false, true]) {
    for (const c of [1, 16, 64]) {
      // Interleaved: the stand-in alone, through the bare proxy, then through the gateway, then with a rate-limited key,
      // then with a budgeted one.
      const d = await load(direct, null, c, stream, [standinChild.pid]);
      const f = await load(floor, null, c, stream, [floorChild.pid]);
      const g = await load(gateway.url, gateway.plain, c, stream, pids);
      const l = await load(gateway.url, gateway.limited, c, stream, pids);
      const b = await load(gateway.url, gateway.budgeted, c, stream, pids);
      rows.push({ stream, connections: c, direct: d, floor: f, gateway: g, limited: l, budgeted: b });
    }
  }
  // CPU per streamed chunk: the same streamed load with 4 times the chunks.
  const longer = await load(gateway.url, gateway.plain, 64, true, pids, chunks * 4);
  const shorter = rows.find((r) => r.stream && r.connections === 64).gateway;
  const perChunkUs = ((longer.cpuMsPerRequest - shorter.cpuMsPerRequest) / (chunks * 3)) * 1000;
  const floorLonger = await load(floor, null, 64, true, [floorChild.pid], chunks * 4);
  const floorPerChunkUs = ((floorLonger.cpuMsPerRequest - rows.find((r) => r.stream && r.connections === 64).floor.cpuMsPerRequest) / (chunks * 3)) * 1000;
  const seq = { direct: await sequential(direct, null), floor: await sequential(floor, null), gateway: await sequential(gateway.url, gateway.plain) };
  results.modes[mode] = { idleRssMiB: idleRss, rssAfterMiB: pids.map(rssMiB), rows, sequential: seq, perChunkUs, floorPerChunkUs };
  for (const pid of pids) process.kill(pid, "SIGTERM");
}

if (process.env.MAKINA_BENCH_PEER === "1") {
  // The peer gateway in front of the same stand-in, as its own process.
  const peerEntry = join(root, "scripts/bench/peer/node_modules/@portkey-ai/gateway/build/start-server.js");
  const port = 18000 + Math.floor(Math.random() * 1000);
  const peer = spawn(process.execPath, [peerEntry, `--port=${port}`, "--headless"], { stdio: "ignore", env: { ...process.env, NODE_ENV: "production" } });
  children.push(peer);
  const headers = { "x-portkey-provider": "openai", "x-portkey-custom-host": `${direct}/v1` };
  const peerUrl = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    const ok = await fetch(`${peerUrl}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer x", ...headers }, body: body(false) }).then((r) => r.ok, () => false);
    if (ok) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const rows = [];
  for (const stream of [false, true]) {
    for (const c of [1, 16, 64]) {
      const d = await load(direct, null, c, stream, [standinChild.pid]);
      const p = await load(peerUrl, "x", c, stream, [peer.pid], chunks, headers);
      rows.push({ stream, connections: c, direct: d, peer: p });
    }
  }
  results.peer = { rows, idleRssMiB: [rssMiB(peer.pid)] };
}

console.log(`Machine: ${results.machine}; Node ${results.node}; ${seconds} s per round; ${chunks} chunks per streamed answer${process.env.MAKINA_BENCH_APART === "1" ? ", written apart by the stand-in" : ""}; logs to a file at info level\n`);
for (const [mode, m] of Object.entries(results.modes)) {
  console.log(`### ${mode === "one" ? "One process (relay and agent together, as makina up)" : "Two processes (relay, agent)"}\n`);
  console.log("| request | conc. | stand-in req/s | gateway req/s | limited key req/s | budgeted key req/s | stand-in p50 / p99 | gateway p50 / p99 | added p50 | gateway CPU per request (budgeted key) |");
  console.log("|---|---|---|---|---|---|---|---|---|---|");
  for (const r of m.rows) {
    console.log(
      `| ${r.stream ? "streamed" : "non-streamed"} | ${r.connections} | ${r.direct.rps.toFixed(0)} | ${r.gateway.rps.toFixed(0)} | ${r.limited.rps.toFixed(0)} | ${r.budgeted.rps.toFixed(0)} | ${r.direct.p50} / ${r.direct.p99} ms | ${r.gateway.p50} / ${r.gateway.p99} ms | ${(r.gateway.p50 - r.direct.p50).toFixed(2)} ms | ${r.gateway.cpuMsPerRequest.toFixed(2)} ms (${r.budgeted.cpuMsPerRequest.toFixed(2)} ms) |`,
    );
  }
  const q = m.sequential;
  console.log(
    `\nOne request at a time (p50 of 300, to the µs): non-streamed ${q.direct.p50.toFixed(2)} ms direct, ${q.gateway.p50.toFixed(2)} ms through the gateway ` +
      `(added ${(q.gateway.p50 - q.direct.p50).toFixed(2)} ms); time to first byte, streamed: ${q.direct.firstByte.toFixed(2)} ms direct, ${q.gateway.firstByte.toFixed(2)} ms ` +
      `(added ${(q.gateway.firstByte - q.direct.firstByte).toFixed(2)} ms). CPU per streamed chunk (c=64, ${chunks} vs ${chunks * 4} chunks): ${m.perChunkUs.toFixed(1)} µs. ` +
      `Idle RSS: ${m.idleRssMiB.map((x) => `${x.toFixed(0)} MiB`).join(" + ")}; after the runs: ${m.rssAfterMiB.map((x) => `${x.toFixed(0)} MiB`).join(" + ")}.\n`,
  );
}
for (const [mode, m] of Object.entries(results.modes)) {
  // Against the floor: what the gateway adds beyond the stand-in, over what the bare proxy adds (issue 47's targets).
  const q = m.sequential;
  const added = (x) => x - q.direct.p50;
  const addedFirst = (x) => x - q.direct.firstByte;
  const ratio = (a, b) => (b > 0 ? `${(a / b).toFixed(2)}×` : "—");
  const c64 = m.rows.find((r) => !r.stream && r.connections === 64);
  console.log(`### Against the floor (${mode === "one" ? "one process" : "two processes"}; the bare proxy is one process)\n`);
  console.log("| figure | floor | gateway | ratio | target |\n|---|---|---|---|---|");
  console.log(`| added p50, one request at a time | ${added(q.floor.p50).toFixed(3)} ms | ${added(q.gateway.p50).toFixed(3)} ms | ${ratio(added(q.gateway.p50), added(q.floor.p50))} | ≤ 1.5× |`);
  console.log(`| added time to first byte, streamed | ${addedFirst(q.floor.firstByte).toFixed(3)} ms | ${addedFirst(q.gateway.firstByte).toFixed(3)} ms | ${ratio(addedFirst(q.gateway.firstByte), addedFirst(q.floor.firstByte))} | ≤ 1.5× |`);
  console.log(`| CPU per streamed chunk (c=64) | ${m.floorPerChunkUs.toFixed(1)} µs | ${m.perChunkUs.toFixed(1)} µs | ${ratio(m.perChunkUs, m.floorPerChunkUs)} | ≤ 2× |`);
  console.log(`| req/s, non-streamed, c=64 | ${c64.floor.rps.toFixed(0)} | ${c64.gateway.rps.toFixed(0)} | ${ratio(c64.gateway.rps, c64.floor.rps)} | ≥ 0.6× |`);
  for (const r of m.rows) {
    console.log(`| CPU per request, ${r.stream ? "streamed" : "non-streamed"}, c=${r.connections} | ${r.floor.cpuMsPerRequest.toFixed(3)} ms | ${r.gateway.cpuMsPerRequest.toFixed(3)} ms | ${ratio(r.gateway.cpuMsPerRequest, r.floor.cpuMsPerRequest)} | |`);
  }
  console.log("");
}
if (results.peer) {
  console.log("### Peer gateway (@portkey-ai/gateway 1.15.2, one process)\n");
  console.log("| request | conc. | stand-in req/s | peer req/s | stand-in p50 / p99 | peer p50 / p99 | peer CPU per request |\n|---|---|---|---|---|---|---|");
  for (const r of results.peer.rows) {
    console.log(`| ${r.stream ? "streamed" : "non-streamed"} | ${r.connections} | ${r.direct.rps.toFixed(0)} | ${r.peer.rps.toFixed(0)} | ${r.direct.p50} / ${r.direct.p99} ms | ${r.peer.p50} / ${r.peer.p99} ms | ${r.peer.cpuMsPerRequest.toFixed(2)} ms |`);
  }
  console.log("");
}
if (process.env.MAKINA_BENCH_JSON) writeFileSync(process.env.MAKINA_BENCH_JSON, JSON.stringify(results, null, 2) + "\n");
for (const c of children) c.kill("SIGTERM");
rmSync(dir, { recursive: true, force: true });
process.exit(0);
