#!/usr/bin/env node
// The GGUF path before and after a change, in one run: two gateways (another checkout's built dist/, and this
// one's), each with its own model process, serving the same requests in alternation, so that both see the same
// machine at the same moments (this machine's speed drifts by tens of percent within minutes: separate runs of
// scripts/bench-gguf.mjs compare each with its own baseline, this compares the two with each other).
//   node scripts/bench/gguf-before-after.mjs BEFORE_ROOT [MODEL]
// Each gateway first serves MAKINA_BENCH_WARMUP (default 3000) 1-token answers and a twentieth as many streams
// (a gateway in service runs optimized code), then 1,000 rounds of a 1-token answer and a streamed 8-token one
// each (the time to its first token), then 15 rounds of 8 concurrent 128-token streams (their aggregate rate).
import { mkdtempSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { children, pct, start } from "./bench-children.mjs";

const here = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const [beforeRoot, modelArg] = process.argv.slice(2);
if (!beforeRoot) {
  process.stderr.write("usage: gguf-before-after.mjs BEFORE_ROOT [MODEL]\n");
  process.exit(2);
}
const model = resolve(modelArg ?? join(here, "..", "shared", "models", "stories260K.gguf"));
const WARMUP = Number(process.env.MAKINA_BENCH_WARMUP ?? 3000);
const dir = mkdtempSync(join(tmpdir(), "makina-bench-gguf-ab-"));
const trees = { before: resolve(beforeRoot), after: here };
const gateways = {};
for (const [name, root] of Object.entries(trees)) gateways[name] = (await start("scripts/bench/gguf-gateway-process.mjs", [join(dir, name), model], "url", { MAKINA_BENCH_ROOT: root })).msg;

const http = new Agent({ keepAlive: true, maxSockets: 16 });
/** One request: a 1-token answer's whole time, or a stream's time to its first text; and the tokens it reports. */
function one(gw, { stream = false, maxTokens = 1 } = {}) {
  const body = JSON.stringify({ model: "bench", messages: [{ role: "user", content: "Once upon a time" }], temperature: 0, stream, max_tokens: maxTokens, ...(stream ? { stream_options: { include_usage: true } } : {}) });
  return new Promise((resolveRequest, reject) => {
    const t0 = performance.now();
    let first = 0;
    let text = "";
    const req = request(`${gw.url}/v1/chat/completions`, { method: "POST", agent: http, headers: { authorization: `Bearer ${gw.key}`, "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (res) => {
      res.setEncoding("utf8");
      res.on("data", (s) => {
        if (!first && /"content":"[^"]/.test(s)) first = performance.now();
        text += s;
      });
      res.on("end", () => {
        if (res.statusCode !== 200) return reject(new Error(`gateway answered ${res.statusCode}: ${text.slice(0, 300)}`));
        const tokens = Number(/"completion_tokens":(\d+)/.exec(text)?.[1] ?? 0);
        resolveRequest({ ms: (stream ? first : performance.now()) - t0, tokens });
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}
async function eight(gw) {
  const t0 = performance.now();
  const all = await Promise.all(Array.from({ length: 8 }, () => one(gw, { stream: true, maxTokens: 128 })));
  return all.reduce((n, r) => n + r.tokens, 0) / ((performance.now() - t0) / 1000);
}

const names = Object.keys(trees);
for (let i = 0; i < WARMUP; i++) for (const n of names) await one(gateways[n]);
for (let i = 0; i < WARMUP / 20; i++) for (const n of names) await one(gateways[n], { stream: true, maxTokens: 8 });
const out = Object.fromEntries(names.map((n) => [n, { one: [], first: [], eight: [] }]));
// The order turns each round.
const order = (i) => (i % 2 ? names : [...names].reverse());
for (let i = 0; i < 1000; i++) {
  for (const n of order(i)) {
    out[n].one.push((await one(gateways[n])).ms);
    out[n].first.push((await one(gateways[n], { stream: true, maxTokens: 8 })).ms);
  }
}
for (let i = 0; i < 15; i++) for (const n of order(i)) out[n].eight.push(await eight(gateways[n]));

const ms = (x) => `${x.toFixed(2)} ms`;
const ratio = median(out.after.eight.map((x, i) => x / out.before.eight[i]));
function median(xs) {
  return pct(xs, 50);
}
console.log(`GGUF through the gateway, before (${trees.before}) and after (${trees.after}), alternating; model ${model.split("/").pop()}\n`);
console.log("| measure | before | after |\n|---|---|---|");
console.log(`| 1-token answer, not streamed (p50 / p95 of 1,000) | ${ms(median(out.before.one))} / ${ms(pct(out.before.one, 95))} | ${ms(median(out.after.one))} / ${ms(pct(out.after.one, 95))} |`);
console.log(`| time to first token, streamed (p50 / p95 of 1,000) | ${ms(median(out.before.first))} / ${ms(pct(out.before.first, 95))} | ${ms(median(out.after.first))} / ${ms(pct(out.after.first, 95))} |`);
console.log(`| 8 concurrent 128-token streams, tokens/s (median of 15; after / before: median of the rounds' ratios ${(ratio * 100).toFixed(1)}%) | ${median(out.before.eight).toFixed(0)} | ${median(out.after.eight).toFixed(0)} |`);
http.destroy();
for (const c of children) c.kill();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
