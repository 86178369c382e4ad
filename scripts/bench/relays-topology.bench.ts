import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import autocannon from "autocannon";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, it } from "vitest";
import { createTestDatabase, startPostgres } from "../../test/helpers/postgres-server.js";
import { startNats } from "../../test/helpers/nats-server.js";
import { startRedis } from "../../test/helpers/redis-server.js";
import { BenchProcesses, cpuMs, percentile as pct } from "./bench-processes.js";

/**
 * The scaled topology, measured (`npm run bench` runs it after the one-relay benchmarks): three relays, each its
 * own process, on one real PostgreSQL, NATS and Redis; one agent process linked to relay A, serving an
 * `openai`-kind stack in front of the instant stand-in (scripts/bench/instant-openai-server.mjs). In the same
 * run, for comparison: one relay on SQLite with the same agent and stand-in. Requests sent to relay A are
 * served locally; sent to relay B, they cross to A over B's direct connection to A; sent to relay C (started
 * with `--peer-address off`), they cross over NATS. Interleaved rounds of MAKINA_BENCH_SECONDS
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
  /** CPU per request of each process measured, in the order given. */
  cpuMsEach: number[];
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
  const each = pids.map((pid, i) => cpuMs(pid) - before[i]!);
  const cpu = each.reduce((a, b) => a + b, 0);
  const ok = r.requests.total - r.non2xx;
  if (r.non2xx || r.errors) process.stderr.write(`  warning: ${r.non2xx} non-2xx, ${r.errors} errors (${url}, c=${connections})\n`);
  return { rps: ok / seconds, p50: r.latency.p50, cpuMsPerRequest: cpu / Math.max(1, ok), cpuMsEach: each.map((c) => c / Math.max(1, ok)) };
}

/** p50 of 300 non-streamed requests one at a time, to the µs. */
/** p50 of 300 non-streamed requests one at a time to each URL, to the µs: 100 to each in turn, three times over. */
async function sequential(targets: { url: string; key: string }[]): Promise<number[]> {
  const times: number[][] = targets.map(() => []);
  for (let round = 0; round < 3; round++) {
    for (const [i, { url, key }] of targets.entries()) {
      for (let n = 0; n < 100; n++) {
        const t = performance.now();
        await (await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${key}` }, body: body(false) })).arrayBuffer();
        times[i]!.push(performance.now() - t);
      }
    }
  }
  return times.map((t) => pct(t, 50));
}

it("measures two relays on PostgreSQL, NATS and Redis against one on SQLite", async () => {
  const [postgres, nats, redis] = await Promise.all([startPostgres(), startNats(), startRedis()]);
  cleanups.push(() => postgres.stop(), () => nats.close(), () => redis.close());
  // Every relay is given the one secrets key its database's secrets are sealed with.
  const scaled = { MAKINA_DATABASE_URL: await createTestDatabase(postgres.url), MAKINA_NATS_URL: nats.url, MAKINA_REDIS_URL: redis.url, MAKINA_SECRETS_KEY: randomBytes(32).toString("base64") };
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
  const { url: aUrl, key, budgeted } = (await a.next("url")) as { url: string; key: string; budgeted: string };
  // B reaches A directly (its default); C only over NATS (--peer-address off), as every relay did before.
  const b = await start("scripts/bench/relay-process.mjs", [join(dir, "b"), "other"], "url", scaled);
  const c = await start("scripts/bench/relay-process.mjs", [join(dir, "c"), "other"], "url", { ...scaled, MAKINA_PEER_ADDRESS: "off" });
  const [bUrl, cUrl] = [b.msg.url as string, c.msg.url as string];
  for (const url of [bUrl, cUrl]) {
    for (let i = 0; i < 100 && (await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${key}` }, body: body(false) })).status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  // B's direct connection to A, as B's /metrics says it (dialed once B heard of A).
  // (The deployment's admin token, made by A, the first relay.)
  const adminToken = readFileSync(join(dir, "a", "admin-token"), "utf8").trim();
  for (let i = 0; i < 100; i++) {
    const metrics = await (await fetch(`${bUrl}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } })).text();
    if (/makina_other_relays\{[^}]*via="direct"/.test(metrics)) break;
    if (i === 99) throw new Error("relay B never linked directly to relay A");
    await new Promise((r) => setTimeout(r, 100));
  }

  const onePids = [sqlite.child.pid!, agent0.child.pid!];
  const scaledPids = [a.child.pid!, b.child.pid!, c.child.pid!, agent.child.pid!];
  if (process.env.MAKINA_BENCH_BUDGET === "1") return budgetOnly(aUrl, key, budgeted, [...scaledPids, redisPid(redis.port)]);
  const rows: { stream: boolean; c: number; sqlite: Load; local: Load; budgeted: Load; direct: Load; nats: Load }[] = [];
  for (const stream of [false, true]) {
    for (const conc of [1, 16, 64]) {
      // Interleaved: the SQLite relay, then relay A (local), then B (crossing to A directly), then C (crossing over NATS).
      rows.push({
        stream,
        c: conc,
        sqlite: await load(one.url, one.plain, conc, stream, onePids),
        local: await load(aUrl, key, conc, stream, scaledPids),
        // The same with a key whose token budget is checked and settled in Redis.
        budgeted: await load(aUrl, budgeted, conc, stream, scaledPids),
        direct: await load(bUrl, key, conc, stream, scaledPids),
        nats: await load(cUrl, key, conc, stream, scaledPids),
      });
    }
  }
  const [sqliteSeq, localSeq, directSeq, natsSeq] = await sequential([
    { url: one.url, key: one.plain },
    { url: aUrl, key },
    { url: bUrl, key },
    { url: cUrl, key },
  ]);
  const seq = { sqlite: sqliteSeq!, local: localSeq!, direct: directSeq!, nats: natsSeq! };

  const lines = [
    `Machine: ${cpus()[0]?.model ?? "?"}, ${availableParallelism()} CPUs; Node ${process.version}; ${seconds} s per round; ${chunks} chunks per streamed answer.`,
    "",
    "| request | conc. | SQLite relay req/s | scaled, local req/s | local, budgeted key req/s | crossing directly req/s | crossing over NATS req/s | SQLite p50 | local p50 | local budgeted p50 | direct p50 | NATS p50 | CPU per request: SQLite / local / local budgeted / direct / NATS |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ...rows.map(
      (r) =>
        `| ${r.stream ? "streamed" : "non-streamed"} | ${r.c} | ${r.sqlite.rps.toFixed(0)} | ${r.local.rps.toFixed(0)} | ${r.budgeted.rps.toFixed(0)} | ${r.direct.rps.toFixed(0)} | ${r.nats.rps.toFixed(0)} | ${r.sqlite.p50} ms | ${r.local.p50} ms | ${r.budgeted.p50} ms | ${r.direct.p50} ms | ${r.nats.p50} ms | ${r.sqlite.cpuMsPerRequest.toFixed(2)} / ${r.local.cpuMsPerRequest.toFixed(2)} / ${r.budgeted.cpuMsPerRequest.toFixed(2)} / ${r.direct.cpuMsPerRequest.toFixed(2)} / ${r.nats.cpuMsPerRequest.toFixed(2)} ms |`,
    ),
    "",
    `One request at a time (p50 of 300 each, non-streamed, interleaved): SQLite relay ${seq.sqlite.toFixed(2)} ms, scaled local ${seq.local.toFixed(2)} ms, crossing directly ${seq.direct.toFixed(2)} ms, crossing over NATS ${seq.nats.toFixed(2)} ms: the hop adds ${(seq.direct - seq.local).toFixed(2)} ms directly, ${(seq.nats - seq.local).toFixed(2)} ms over NATS.`,
  ];
  console.log(lines.join("\n"));
  if (process.env.MAKINA_BENCH_JSON) writeFileSync(process.env.MAKINA_BENCH_JSON, JSON.stringify({ rows, sequential: seq }, null, 2) + "\n");
}, 900_000);

/** The Redis server's process (its title names its port), so its CPU is counted with the relays'. */
function redisPid(port: number): number {
  return Number(execFileSync("pgrep", ["-f", `redis-server 127.0.0.1:${port}`], { encoding: "utf8" }).trim().split("\n")[0]);
}

/**
 * MAKINA_BENCH_BUDGET=1: only relay A's plain key against its budgeted key (what a budget costs with Redis), in
 * MAKINA_BENCH_PAIRS (default 3) pairs of rounds whose order alternates, CPU counted with Redis's.
 */
async function budgetOnly(url: string, plain: string, budgeted: string, pids: number[]): Promise<void> {
  const pairs = Number(process.env.MAKINA_BENCH_PAIRS ?? 3);
  // One round of each first, not counted: the processes' code warms up.
  for (const k of [plain, budgeted]) await load(url, k, 16, false, pids);
  const lines = [`| request | conc. | plain key req/s | budgeted key req/s | CPU per request (relays, agent, Redis) plain / budgeted | of which relay A / Redis, budgeted |`, "|---|---|---|---|---|---|"];
  for (const [stream, conc] of [[false, 16], [false, 64], [true, 16]] as const) {
    const runs: { plain: Load[]; budgeted: Load[] } = { plain: [], budgeted: [] };
    for (let i = 0; i < pairs; i++) {
      const order = i % 2 === 0 ? (["plain", "budgeted"] as const) : (["budgeted", "plain"] as const);
      for (const which of order) runs[which].push(await load(url, which === "plain" ? plain : budgeted, conc, stream, pids));
    }
    const say = (l: Load[]) => l.map((x) => x.rps.toFixed(0)).join(", ");
    const cpu = (l: Load[]) => l.map((x) => x.cpuMsPerRequest.toFixed(3)).join(", ");
    const parts = (l: Load[]) => l.map((x) => `${x.cpuMsEach[0]!.toFixed(3)} / ${x.cpuMsEach.at(-1)!.toFixed(3)}`).join(", ");
    lines.push(`| ${stream ? "streamed" : "non-streamed"} | ${conc} | ${say(runs.plain)} | ${say(runs.budgeted)} | ${cpu(runs.plain)} / ${cpu(runs.budgeted)} ms | ${parts(runs.budgeted)} ms (plain: ${parts(runs.plain)}) |`);
  }
  console.log(lines.join("\n"));
}
