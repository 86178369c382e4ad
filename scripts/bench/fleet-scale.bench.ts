import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, it } from "vitest";
import { createTestDatabase, startPostgres, type PostgresServer } from "../../test/helpers/postgres-server.js";
import { startNats } from "../../test/helpers/nats-server.js";
import { startRedis } from "../../test/helpers/redis-server.js";
import { BenchProcesses, cpuMs, rssBytes, type BenchProcess } from "./bench-processes.js";

/**
 * A fleet at scale, simulated (`npm run bench` runs it last): three relays, each its own process, on one real
 * PostgreSQL, NATS and Redis, with the link's TLS on as beyond loopback; N simulated agents
 * (scripts/bench/simulated-agents.mjs: the agent's real link client and failover dialer over a light HTTP/2
 * stand-in for its gRPC dialer, one TLS connection each, given all three relays; the machine behind each link
 * is a stand-in answering at once).
 * One machine in MAKINA_BENCH_FLEET_EVERY (default 10) serves a stack of its own. For each N of
 * MAKINA_BENCH_FLEET_SIZES (default 1000,3000,10000), on a fresh database and fresh relays:
 *   - the machines come up MAKINA_BENCH_FLEET_JOIN_PER_S a second (default 500: 20 s for 10,000): time until
 *     every agent is linked, then until every stack is served through every relay (from then on,
 *     a request for each stack sent to each relay until it answers 200: its deployment ran on the machine's
 *     relay and the others learnt where it is);
 *   - idle, for 10 s: the relays' CPU (heartbeats every 5 s from every agent, keepalives, announcements)
 *     and the whole machine's; the relays' resident memory against before the agents came, per agent;
 *   - the reconnect storm: the relay holding a third of the agents is killed (SIGKILL); time until every
 *     agent is linked again, then until every stack is served again through both relays left; the CPU of the
 *     two relays left, of the simulators and of the whole machine until every agent was linked again.
 * The simulated agents run on the same 2 cores as the relays, PostgreSQL and NATS: every time includes them.
 * Results as a markdown table on stdout (and MAKINA_BENCH_FLEET_JSON).
 */
const sizes = (process.env.MAKINA_BENCH_FLEET_SIZES ?? "1000,3000,10000").split(",").map(Number);
const every = Number(process.env.MAKINA_BENCH_FLEET_EVERY ?? 10);
/** How many machines come up a second, in all (they do over time, as a fleet's machines boot). */
const joinPerSecond = Number(process.env.MAKINA_BENCH_FLEET_JOIN_PER_S ?? 500);
/** Agents per simulator process. */
const AGENTS_PER_PROCESS = 5000;
const IDLE_SECONDS = 10;
/** A fleet not all linked within this long is reported as such (with the most that were) rather than waited for. */
const LINK_DEADLINE_MS = 5 * 60_000;
/** MAKINA_BENCH_FLEET_TLS=off: the link without TLS (to tell its handshakes' cost apart). */
const tls = process.env.MAKINA_BENCH_FLEET_TLS !== "off";
const dir = mkdtempSync(join(tmpdir(), "makina-bench-fleet-"));
const processes = new BenchProcesses();
const cleanups: (() => Promise<void>)[] = [];

afterAll(async () => {
  processes.killAll("SIGKILL");
  for (const c of cleanups.reverse()) await c();
  rmSync(dir, { recursive: true, force: true });
});

interface Relay {
  proc: BenchProcess;
  url: string;
  server: string;
}

/** The simulators' welcomed links, summed over their processes, as they last reported. */
class Linked {
  private readonly reports = new Map<number, { linked: number; by: Record<string, number> }>();
  private readonly waiters = new Set<() => void>();
  /** Set when a simulator exited before the end. */
  private died: Error | undefined;
  private ending = false;

  watch(sim: BenchProcess): void {
    sim.onLine((m) => {
      this.reports.set(sim.child.pid!, m as { linked: number; by: Record<string, number> });
      for (const w of this.waiters) w();
    });
    sim.child.once("exit", (code, signal) => {
      if (this.ending) return;
      this.died = new Error(`a simulator exited (${code ?? signal}) before the end`);
      for (const w of this.waiters) w();
    });
  }

  /** The simulators are stopped on purpose from now on. */
  end(): void {
    this.ending = true;
  }

  get total(): number {
    return [...this.reports.values()].reduce((a, r) => a + r.linked, 0);
  }

  by(server: string): number {
    return [...this.reports.values()].reduce((a, r) => a + (r.by[server] ?? 0), 0);
  }

  /** The most agents linked at once so far. */
  most = 0;

  /** Resolves once `test` holds, with the time it first did; null when it did not within `withinMs`. */
  until(test: () => boolean, withinMs = LINK_DEADLINE_MS): Promise<number | null> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        resolve(null);
      }, withinMs);
      const check = () => {
        this.most = Math.max(this.most, this.total);
        if (!this.died && !test()) return;
        this.waiters.delete(check);
        clearTimeout(timer);
        if (this.died) reject(this.died);
        else resolve(performance.now());
      };
      this.waiters.add(check);
      check();
    });
  }
}

/** Sends a request for every model to every relay until each answered 200; resolves with the time the last one did. */
async function servedEverywhere(relays: Relay[], models: string[], key: string): Promise<{ at: number; refused: number }> {
  let pending = relays.flatMap((r) => models.map((model) => ({ url: r.url, model })));
  let at = performance.now();
  let refused = 0;
  const deadline = performance.now() + 600_000;
  const statuses = new Map<string, number>();
  const progress = setInterval(() => process.stderr.write(`  ${pending.length} not served yet; answers so far: ${JSON.stringify(Object.fromEntries(statuses))}\n`), 5000);
  while (pending.length) {
    if (performance.now() > deadline) throw new Error(`${pending.length} stacks still not served after 10 minutes`);
    const left: typeof pending = [];
    let i = 0;
    const worker = async () => {
      while (i < pending.length) {
        const p = pending[i++]!;
        const res = await fetch(`${p.url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
          body: JSON.stringify({ model: p.model, messages: [{ role: "user", content: "there?" }] }),
          signal: AbortSignal.timeout(30_000),
        }).catch(() => undefined);
        const text = await res?.text();
        const why = res ? `${res.status} ${(/"code":"([^"]+)"/.exec(text ?? "") ?? [])[1] ?? ""}`.trim() : "no answer";
        statuses.set(why, (statuses.get(why) ?? 0) + 1);
        if (res?.status === 200) at = performance.now();
        else {
          refused++;
          left.push(p);
        }
      }
    };
    await Promise.all(Array.from({ length: 32 }, worker));
    if (left.length) await sleep(100);
    pending = left;
  }
  clearInterval(progress);
  return { at, refused };
}

/** A fleet that never got all linked: how far it came. */
interface Failed {
  agents: number;
  stacks: number;
  failed: string;
}

interface Row {
  agents: number;
  stacks: number;
  linkedS: number;
  routableS: number;
  relayRssBeforeMiB: number[];
  relayRssAfterMiB: number[];
  kibPerAgent: number;
  relayCpuPct: number;
  machineCpuPct: number;
  spread: number[];
  killedHeld: number;
  relinkedS: number;
  servedAgainS: number;
  refusedDuringStorm: number;
  /** While the killed relay's agents relinked: the two relays left, the simulators, the whole machine (% of one core). */
  stormCpuPct: { relays: number; simulators: number; machine: number };
}

/** Busy and total jiffies of the whole machine, from /proc/stat. */
function machineJiffies(): { busy: number; total: number } {
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - f[3]! - f[4]!, total };
}

async function measure(postgres: PostgresServer, nats: string, redis: string, n: number): Promise<Row | Failed> {
  const here = join(dir, String(n));
  mkdirSync(here);
  // Every relay is given the one secrets key its database's secrets are sealed with.
  const env = { MAKINA_DATABASE_URL: await createTestDatabase(postgres.url), MAKINA_NATS_URL: nats, MAKINA_REDIS_URL: redis, MAKINA_GRPC_TLS: tls ? "on" : "off", MAKINA_SECRETS_KEY: randomBytes(32).toString("base64") };
  const first = await processes.start("scripts/bench/relay-process.mjs", [join(here, "a"), "fleet", String(n), String(every)], "models", env);
  const { key, caSha256, caFile, models } = first.msg as { key: string; caSha256: string; caFile: string; models: string[] };
  const relays: Relay[] = [{ proc: first, url: first.msg.url as string, server: first.msg.server as string }];
  for (const name of ["b", "c"]) {
    const p = await processes.start("scripts/bench/relay-process.mjs", [join(here, name), "other"], "url", env);
    relays.push({ proc: p, url: p.msg.url as string, server: p.msg.server as string });
  }
  await sleep(2000);
  const pids = relays.map((r) => r.proc.child.pid!);
  const rssBefore = pids.map(rssBytes);

  // The fleet comes up: MAKINA_BENCH_FLEET_JOIN_PER_S machines a second (default 500), spread over the simulators.
  const linked = new Linked();
  const t0 = performance.now();
  const sims: BenchProcess[] = [];
  for (let from = 0; from < n; from += AGENTS_PER_PROCESS) {
    const sim = await processes.start(
      "scripts/bench/simulated-agents.mjs",
      [join(here, "a", "machines.json"), String(from), String(Math.min(AGENTS_PER_PROCESS, n - from)), relays.map((r) => r.server).join(","), tls ? caSha256 : "", caFile, String(joinPerSecond / Math.ceil(n / AGENTS_PER_PROCESS))],
      "linked",
    );
    linked.watch(sim);
    sims.push(sim);
  }
  const tick = setInterval(() => process.stderr.write(`  ${linked.total} of ${n} agents linked (${relays.map((r) => linked.by(r.server)).join(" / ")})\n`), 5000);
  // The requests start once every agent is linked: sent all along, they would take the 2 cores from the linking.
  const linkedAt = await linked.until(() => linked.total === n);
  if (linkedAt === null) {
    clearInterval(tick);
    linked.end();
    for (const p of [...sims, ...relays.map((r) => r.proc)]) p.child.kill("SIGKILL");
    return { agents: n, stacks: models.length, failed: `never all linked: at most ${linked.most} at once within ${LINK_DEADLINE_MS / 60_000} min` };
  }
  const served = await servedEverywhere(relays, models, key);

  // Idle: heartbeats and keepalives only.
  await sleep(3000);
  const cpuBefore = pids.map(cpuMs);
  const machineBefore = machineJiffies();
  await sleep(IDLE_SECONDS * 1000);
  const relayCpuMs = pids.map((pid, i) => cpuMs(pid) - cpuBefore[i]!).reduce((a, b) => a + b, 0);
  const machineAfter = machineJiffies();
  const rssAfter = pids.map(rssBytes);
  const spread = relays.map((r) => linked.by(r.server));

  // The storm: the relay holding the last third is killed; its agents link to the two left.
  const killed = relays[2]!;
  const killedHeld = linked.by(killed.server);
  const survivors = pids.slice(0, 2);
  const simPids = sims.map((p) => p.child.pid!);
  const stormBefore = { relays: survivors.map(cpuMs), sims: simPids.map(cpuMs), machine: machineJiffies() };
  const tKill = performance.now();
  killed.proc.child.kill("SIGKILL");
  await linked.until(() => linked.by(killed.server) === 0);
  const relinkedAt = (await linked.until(() => linked.total === n && linked.by(killed.server) === 0)) ?? Number.NaN;
  const stormMs = performance.now() - tKill;
  const stormMachine = machineJiffies();
  const sumSince = (now: number[], before: number[]) => now.reduce((a, v, i) => a + v - before[i]!, 0);
  const stormCpuPct = {
    relays: (sumSince(survivors.map(cpuMs), stormBefore.relays) / stormMs) * 100,
    simulators: (sumSince(simPids.map(cpuMs), stormBefore.sims) / stormMs) * 100,
    machine: ((stormMachine.busy - stormBefore.machine.busy) / (stormMachine.total - stormBefore.machine.total)) * 100 * availableParallelism(),
  };
  const servedAgain = await servedEverywhere(relays.slice(0, 2), models, key);

  clearInterval(tick);
  linked.end();
  // SIGTERM when profiling (each process saves its profile then, awaited here: the next fleet or the bench's
  // end would kill it first), SIGKILL otherwise.
  const profiling = Boolean(process.env.MAKINA_BENCH_CPU_PROFILE);
  const stopping = [...sims, ...relays.map((r) => r.proc)].filter((p) => p.child.exitCode === null && p.child.signalCode === null);
  const exited = stopping.map((p) => new Promise<void>((resolve) => p.child.once("exit", () => resolve())));
  for (const p of stopping) p.child.kill(profiling ? "SIGTERM" : "SIGKILL");
  if (profiling) await Promise.race([Promise.all(exited), sleep(120_000)]);
  const mib = (b: number) => Math.round(b / 1048576);
  return {
    agents: n,
    stacks: models.length,
    linkedS: (linkedAt - t0) / 1000,
    routableS: (served.at - t0) / 1000,
    relayRssBeforeMiB: rssBefore.map(mib),
    relayRssAfterMiB: rssAfter.map(mib),
    kibPerAgent: (rssAfter.reduce((a, b) => a + b, 0) - rssBefore.reduce((a, b) => a + b, 0)) / 1024 / n,
    relayCpuPct: (relayCpuMs / (IDLE_SECONDS * 1000)) * 100,
    machineCpuPct: ((machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total)) * 100 * availableParallelism(),
    spread,
    killedHeld,
    relinkedS: (relinkedAt - tKill) / 1000,
    servedAgainS: (servedAgain.at - tKill) / 1000,
    refusedDuringStorm: servedAgain.refused,
    stormCpuPct,
  };
}

it("measures 3 relays with up to 10,000 simulated agents, and the reconnect storm when one dies", async () => {
  const [postgres, nats, redis] = await Promise.all([startPostgres(), startNats(), startRedis()]);
  cleanups.push(() => postgres.stop(), () => nats.close(), () => redis.close());
  const rows: (Row | Failed)[] = [];
  for (const n of sizes) {
    rows.push(await measure(postgres, nats.url, redis.url, n));
    process.stderr.write(`  fleet of ${n}: ${JSON.stringify(rows.at(-1))}\n`);
  }
  const lines = [
    `Machine: ${cpus()[0]?.model ?? "?"}, ${availableParallelism()} CPUs; Node ${process.version}; 3 relays on PostgreSQL, NATS and Redis, link over TLS; one machine in ${every} serves a stack; heartbeats every 5 s (the relays' default); machines come up ${joinPerSecond} a second.`,
    "",
    "| agents (stacks) | linked after | every stack served on every relay after | relays' memory, before → linked (MiB) | per agent | relays' CPU idle (of one core) | machine CPU idle (of one core) | agents per relay | killed relay held | relinked after | served again after | CPU while relinking: relays left / simulators / machine (of one core) |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ...rows.map((r) =>
      "failed" in r
        ? `| ${r.agents} (${r.stacks}) | ${r.failed} | | | | | | | | | | |`
        : `| ${r.agents} (${r.stacks}) | ${r.linkedS.toFixed(1)} s | ${r.routableS.toFixed(1)} s | ${r.relayRssBeforeMiB.join(" / ")} → ${r.relayRssAfterMiB.join(" / ")} | ${r.kibPerAgent.toFixed(0)} KiB | ${r.relayCpuPct.toFixed(0)}% | ${r.machineCpuPct.toFixed(0)}% | ${r.spread.join(" / ")} | ${r.killedHeld} | ${r.relinkedS.toFixed(1)} s | ${r.servedAgainS.toFixed(1)} s (${r.refusedDuringStorm} refusals on the way) | ${r.stormCpuPct.relays.toFixed(0)}% / ${r.stormCpuPct.simulators.toFixed(0)}% / ${r.stormCpuPct.machine.toFixed(0)}% |`,
    ),
  ];
  console.log(lines.join("\n"));
  if (process.env.MAKINA_BENCH_FLEET_JSON) writeFileSync(process.env.MAKINA_BENCH_FLEET_JSON, JSON.stringify(rows, null, 2) + "\n");
}, 3_600_000);
