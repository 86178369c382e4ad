#!/usr/bin/env node
// One relay of the scaled benchmark (scripts/bench/relays-topology.bench.ts), from the built dist/, on the PostgreSQL,
// NATS and Redis named by MAKINA_DATABASE_URL, MAKINA_NATS_URL and MAKINA_REDIS_URL:
//   relay-process.mjs DIR first UPSTREAM   also creates an organization, a machine, an `openai`-kind stack in
//                                          front of UPSTREAM and an API key; prints what an agent needs to join,
//                                          then, once the stack is deployed, {url, key}
//   relay-process.mjs DIR other            a relay on the same database: prints {url, server}
//   relay-process.mjs DIR fleet N EVERY    (scripts/bench/fleet-scale.bench.ts) creates an organization, N machines
//                                          (their IDs and tokens written to DIR/machines.json), an `openai`-kind
//                                          stack deployed on every EVERY-th machine (model ids sim-0, sim-EVERY…)
//                                          and an API key; prints {url, server, key, caSha256, caFile, models}
import { createWriteStream, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const { resolveRelayConfig, startRelay } = await import(join(root, "dist/relay/index.js"));
// The operator (the admin token), as the control plane knows it.
const OP = (await import(join(root, "dist/relay/auth/index.js"))).operatorActor();
const { createLogger, silentLogger } = await import(join(root, "dist/proto/index.js"));
const { certificateSha256 } = await import(join(root, "dist/relay/link/link-tls.js"));

const { cpuProfile } = await import(join(root, "scripts/bench/cpu-profile.mjs"));
const [dir, role, upstream] = process.argv.slice(2);
const profile = await cpuProfile(`relay-${role}`);
// MAKINA_BENCH_LOG_FILE sends the logs (info level, as in production) to that file.
const logFile = process.env.MAKINA_BENCH_LOG_FILE;
const log = logFile ? createLogger({ level: "info", write: ((s) => (line) => s.write(line + "\n"))(createWriteStream(`${logFile}.${process.pid}`, { flags: "a" })) }) : silentLogger();
const relay = await startRelay(resolveRelayConfig({ flags: { dataDir: dir, port: 0, grpcPort: 0, grpcHost: "127.0.0.1" }, env: process.env }), { log });
if (role === "first") {
  const org = await relay.control.orgs.create(OP, { name: "bench" });
  const { machine, token } = await relay.control.machines.create(OP, { org: org.id, name: "bench" });
  process.stdout.write(`${JSON.stringify({ joining: { server: relay.linkAddress, machineId: machine.id, token } })}\n`);
  await new Promise((resolve) => {
    const check = setInterval(() => relay.registry.get(machine.id) && (clearInterval(check), resolve()), 20);
  });
  const stack = await relay.control.stacks.create(OP, { org: org.id, name: "instant", machine: machine.id, runtime: "openai", model: `${upstream}#instant`, modelId: "instant" });
  await relay.control.stacks.deploy(OP, stack.id);
  await relay.deployer.settled(stack.id);
  const key = (await relay.control.keys.create(OP, org.id, { name: "plain" })).key;
  // A key with a token budget it never reaches: what checking and settling a budget costs (in Redis when scaled).
  const budgeted = (await relay.control.keys.create(OP, org.id, { name: "budgeted", budget: { tokens: 1e15, period: "month" } })).key;
  process.stdout.write(`${JSON.stringify({ url: relay.url, key, budgeted })}\n`);
} else if (role === "fleet") {
  const [count, every] = [Number(process.argv[4]), Number(process.argv[5])];
  const org = await relay.control.orgs.create(OP, { name: "fleet" });
  const machines = new Array(count);
  const models = [];
  // 32 at a time: the database's round trips overlap, as many admins' requests would.
  for (let i = 0; i < count; i += 32) {
    await Promise.all(
      Array.from({ length: Math.min(32, count - i) }, async (_, j) => {
        const n = i + j;
        const { machine, token } = await relay.control.machines.create(OP, { org: org.id, name: `sim-${n}` });
        machines[n] = { machineId: machine.id, token };
        if (n % every === 0) {
          const stack = await relay.control.stacks.create(OP, { org: org.id, name: `sim-${n}`, machine: machine.id, runtime: "openai", model: `http://127.0.0.1:9/v1#sim-${n}`, modelId: `sim-${n}` });
          await relay.control.stacks.deploy(OP, stack.id);
          models.push(`sim-${n}`);
        }
      }),
    );
  }
  writeFileSync(join(dir, "machines.json"), JSON.stringify(machines));
  const key = (await relay.control.keys.create(OP, org.id, { name: "fleet" })).key;
  const caFile = join(dir, "tls", "link-ca.pem");
  process.stdout.write(`${JSON.stringify({ url: relay.url, server: relay.linkAddress, key, caSha256: existsSync(caFile) ? certificateSha256(readFileSync(caFile, "utf8")) : "", caFile, models })}\n`);
} else {
  process.stdout.write(`${JSON.stringify({ url: relay.url, server: relay.linkAddress })}\n`);
}
process.on("SIGTERM", () => void profile.save().then(() => relay.stop()).then(() => process.exit(0)));
setInterval(() => {}, 1 << 30);
