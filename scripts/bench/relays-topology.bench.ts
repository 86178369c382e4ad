import autocannon from "autocannon";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, it } from "vitest";
import { createTestDatabase, startPostgres } from "../../test/helpers/postgres-server.js";
import { startNats } from "../../test/helpers/nats-server.js";
import { startRedis } from "../../test/helpers/redis-server.js";
import { BenchProcesses, cpuMs, percentile as pct } from "./bench-processes.js";

/**
 * The scaled topology, measured (`npm run bench` runs it after the one-relay benchmarks): two relays, each its
 * own process, on one real PostgreSQL, NATS and Redis; one agent process linked to relay A, serving an
 * `openai`-kind stack in front of the instant stand-in (scripts/bench/instant-openai-server.mjs). In the same
 * run, for comparison: one relay on SQLite with the same agent and stand-in. Requests sent to relay A are
 * served locally; sent to relay B, they cross to A over NATS. Interleaved rounds of MAKINA_BENCH_SECONDS
 * (default 3) at concurrency 1, 16 and 64, non-streamed and streamed (16 chunks); CPU per request from
 * /proc/PID/stat of the gateway's processes (relays and agent); then 300 requests one at a time, timed to the
 * µs, for the added latency of the hop. Results as a markdown table on stdout (and MAKINA_BENCH_JSON).
 */
const seconds = Number(process.env.MAKINA_BENCH_SECONDS ?? 3);
const chunks = 16;
const dir = mkdtempSync(join(tmpdir(), "makina-bench-relays-"));
const processes = new BenchProcesses();
const start = processes.start.bind(processes);
const cleanups: (() => Promise<void>)[] = [];

afterAll(async () => {
  processes.killAll();
  for (const c of cleanups.reverse()) await c();
  rmSync(dir, { recursive: true, force: true });
});

const body = (stream: boolean) =>
  JSON.stringify({ model: "instant", messages: [{ role: "user", content: "Say hello." }], ...(stream ? { stream: true, max_tokens: chunks } : {}) });

interface Load {
  rps: number;
  p50: number;
  cpuMsPerRequest: number;
}

async function load(url: string, key: string, connections: number, stream: boolean, pids: number[]): Promise<Load> {
  const before = pids.map(cpuMs);
  const r = await autocannon({
    url: `${url}/v1/chat/completions`,
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: body(stream),
    connections,
    duration: seconds,
  });
  const cpu = pids.map((pid, i) => cpuMs(pid) - before[i]!).reduce((a, b) => a + b, 0);
  const ok = r.requests.total - r.non2xx;
  if (r.non2xx || r.errors) process.stderr.write(`  warning: ${r.non2xx} non-2xx, ${r.errors} errors (${url}, c=${connections})\n`);
  return { rps: ok / seconds, p50: r.latency.p50, cpuMsPerRequest: cpu / Math.max(1, ok) };
}

/** p50 of 300 non-streamed requests one at a time, to the µs. */
async function sequential(url: string, key: string): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 300; i++) {
    const t = performance.now();
    await (await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${key}` }, body: body(false) })).arrayBuffer();
    times.push(performance.now() - t);
  }
  return pct(times, 50);
}

it("measures two relays on PostgreSQL, NATS and Redis against one on SQLite", async () => {
  const [postgres, nats, redis] = await Promise.all([startPostgres(), startNats(), startRedis()]);
  cleanups.push(() => postgres.stop(), () => nats.close(), () => redis.close());
  const scaled = { MAKINA_DATABASE_URL: await createTestDatabase(postgres.url), MAKINA_NATS_URL: nats.url, MAKINA_REDIS_URL: redis.url };
  const { msg: standin } = await start("scripts/bench/instant-openai-server.mjs", ["0", String(chunks)], "port");
  const upstream = `http://127.0.0.1:${String(standin.port)}/v1`;

  // One relay on SQLite, its agent in a process of its own (as `makina relay` and `makina agent`).
  const sqlite = await start("scripts/bench/gateway-process.mjs", ["relay", join(dir, "sqlite"), upstream], "joining");
  const j0 = sqlite.msg.joining as { server: string; machineId: string; token: string };
  const agent0 = await start("scripts/bench/gateway-process.mjs", ["agent", join(dir, "sqlite"), j0.server, j0.machineId, j0.token], "ready");
  const one = (await sqlite.next("url")) as { url: string; plain: string };

  // Two relays on PostgreSQL, NATS and Redis; the agent linked to A.
  const a = await start("scripts/bench/relay-process.mjs", [join(dir, "a"), "first", upstream], "joining", scaled);
  const j = a.msg.joining as { server: string; machineId: string; token: string };
  const agent = await start("scripts/bench/gateway-process.mjs", ["agent", join(dir, "scaled"), j.server, j.machineId, j.token], "ready");
  const { url: aUrl, key } = (await a.next("url")) as { url: string; key: string };
  const b = await start("scripts/bench/relay-process.mjs", [join(dir, "b"), "other"], "url", scaled);
  const bUrl = b.msg.url as string;
  for (let i = 0; i < 100 && (await fetch(`${bUrl}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${key}` }, body: body(false) })).status !== 200; i++) {
    await new Promise((r) => setTimeout(r, 100));
  }

  const onePids = [sqlite.child.pid!, agent0.child.pid!];
  const scaledPids = [a.child.pid!, b.child.pid!, agent.child.pid!];
  const rows: { stream: boolean; c: number; sqlite: Load; local: Load; crossing: Load }[] = [];
  for (const stream of [false, true]) {
    for (const c of [1, 16, 64]) {
      // Interleaved: the SQLite relay, then relay A (local), then relay B (crossing to A).
      rows.push({ stream, c, sqlite: await load(one.url, one.plain, c, stream, onePids), local: await load(aUrl, key, c, stream, scaledPids), crossing: await load(bUrl, key, c, stream, scaledPids) });
    }
  }
  const seq = { sqlite: await sequential(one.url, one.plain), local: await sequential(aUrl, key), crossing: await sequential(bUrl, key) };

  const lines = [
    `Machine: ${cpus()[0]?.model ?? "?"}, ${availableParallelism()} CPUs; Node ${process.version}; ${seconds} s per round; ${chunks} chunks per streamed answer.`,
    "",
    "| request | conc. | SQLite relay req/s | scaled, local req/s | scaled, crossing req/s | SQLite p50 | local p50 | crossing p50 | CPU per request: SQLite / local / crossing |",
    "|---|---|---|---|---|---|---|---|---|",
    ...rows.map(
      (r) =>
        `| ${r.stream ? "streamed" : "non-streamed"} | ${r.c} | ${r.sqlite.rps.toFixed(0)} | ${r.local.rps.toFixed(0)} | ${r.crossing.rps.toFixed(0)} | ${r.sqlite.p50} ms | ${r.local.p50} ms | ${r.crossing.p50} ms | ${r.sqlite.cpuMsPerRequest.toFixed(2)} / ${r.local.cpuMsPerRequest.toFixed(2)} / ${r.crossing.cpuMsPerRequest.toFixed(2)} ms |`,
    ),
    "",
    `One request at a time (p50 of 300, non-streamed): SQLite relay ${seq.sqlite.toFixed(2)} ms, scaled local ${seq.local.toFixed(2)} ms, crossing ${seq.crossing.toFixed(2)} ms: the hop adds ${(seq.crossing - seq.local).toFixed(2)} ms.`,
  ];
  console.log(lines.join("\n"));
  if (process.env.MAKINA_BENCH_JSON) writeFileSync(process.env.MAKINA_BENCH_JSON, JSON.stringify({ rows, sequential: seq }, null, 2) + "\n");
}, 900_000);
