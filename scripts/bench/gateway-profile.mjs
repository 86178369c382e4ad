#!/usr/bin/env node
// Where the gateway's CPU goes, by stage (issue 47's "profile before and after"): the gateway as one process (relay
// and agent, as `makina up`) in front of the instant stand-in, profiled as --cpu-prof does
// (scripts/bench/cpu-prof-preload.cjs, from after a warm-up), first under non-streamed requests, then under streamed
// ones, at concurrency 16 for MAKINA_BENCH_SECONDS (default 5) each; prints CPU µs per request by stage
// (scripts/bench/profile-stages.mjs). MAKINA_BENCH_CHUNKS (default 32) chunks a stream; MAKINA_BENCH_APART=1 has the
// stand-in write them apart. Profiling slows what it watches: the shares are the measure, not the totals.
//   npm run build && node scripts/bench/gateway-profile.mjs
import autocannon from "autocannon";
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { children, start } from "./bench-children.mjs";
import { profileStages } from "./profile-stages.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const seconds = Number(process.env.MAKINA_BENCH_SECONDS ?? 5);
const chunks = Number(process.env.MAKINA_BENCH_CHUNKS ?? 32);
const dir = mkdtempSync(join(tmpdir(), "makina-bench-profile-"));
const body = (stream) => JSON.stringify({ model: "instant", messages: [{ role: "user", content: "Say hello." }], ...(stream ? { stream: true, stream_options: { include_usage: true }, max_tokens: chunks } : {}) });
const run = (url, key, stream, duration) =>
  autocannon({ url: `${url}/v1/chat/completions`, method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${key}` }, body: body(stream), connections: 16, duration });

const { msg: standin } = await start("scripts/bench/instant-openai-server.mjs", ["0", String(chunks)], "port", { STANDIN_APART: process.env.MAKINA_BENCH_APART === "1" ? "1" : "0" });
console.log(`Gateway CPU by stage: one process, concurrency 16, ${seconds} s a phase, ${chunks} chunks a stream${process.env.MAKINA_BENCH_APART === "1" ? " (written apart)" : ""}\n`);
for (const stream of [false, true]) {
  const out = join(dir, stream ? "streams" : "requests");
  mkdirSync(out, { recursive: true });
  const { child, msg: gateway } = await start("scripts/bench/gateway-process.mjs", ["one", join(dir, `gw-${stream}`), `http://127.0.0.1:${standin.port}/v1`], "url", {
    NODE_OPTIONS: `--require ${join(root, "scripts/bench/cpu-prof-preload.cjs")}`,
    BENCH_CPU_PROF_DIR: out,
  });
  // Warm: the gateway in service runs optimized code.
  await run(gateway.url, gateway.plain, stream, 3);
  process.kill(child.pid, "SIGUSR2");
  await new Promise((r) => setTimeout(r, 100));
  const r = await run(gateway.url, gateway.plain, stream, seconds);
  const requests = r.requests.total - r.non2xx;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
  const file = readdirSync(out).find((f) => f.endsWith(".cpuprofile"));
  const { ms, busy } = profileStages(join(out, file));
  console.log(`${stream ? "Streamed" : "Non-streamed"} (${requests} requests): ${((busy * 1000) / requests).toFixed(1)} µs of CPU a request in all\n`);
  console.log("| stage | µs a request | share |\n|---|---|---|");
  for (const [stage, t] of Object.entries(ms).sort((a, b) => b[1] - a[1])) console.log(`| ${stage} | ${((t * 1000) / requests).toFixed(1)} | ${((100 * t) / busy).toFixed(0)}% |`);
  console.log("");
}
for (const c of children) c.kill("SIGTERM");
rmSync(dir, { recursive: true, force: true });
process.exit(0);
