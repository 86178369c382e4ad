#!/usr/bin/env node
// One relay of the scaled benchmark (scripts/bench/relays-topology.bench.ts), from the built dist/, on the PostgreSQL,
// NATS and Redis named by MAKINA_DATABASE_URL, MAKINA_NATS_URL and MAKINA_REDIS_URL:
//   relay-process.mjs DIR first UPSTREAM   also creates an organization, a machine, an `openai`-kind stack in
//                                          front of UPSTREAM and an API key; prints what an agent needs to join,
//                                          then, once the stack is deployed, {url, key}
//   relay-process.mjs DIR other            a relay on the same database: prints {url, server}
import { join } from "node:path";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const { resolveRelayConfig, startRelay } = await import(join(root, "dist/relay/index.js"));
const { silentLogger } = await import(join(root, "dist/proto/index.js"));

const [dir, role, upstream] = process.argv.slice(2);
const relay = await startRelay(resolveRelayConfig({ flags: { dataDir: dir, port: 0, grpcPort: 0, grpcHost: "127.0.0.1" }, env: process.env }), { log: silentLogger() });
if (role === "first") {
  const org = await relay.control.createOrg("bench");
  const { machine, token } = await relay.control.createMachine(org.id, "bench");
  process.stdout.write(`${JSON.stringify({ joining: { server: relay.linkAddress, machineId: machine.id, token } })}\n`);
  await new Promise((resolve) => {
    const check = setInterval(() => relay.registry.get(machine.id) && (clearInterval(check), resolve()), 20);
  });
  const stack = await relay.control.createStack({ org: org.id, name: "instant", machine: machine.id, runtime: "openai", model: `${upstream}#instant`, modelId: "instant" });
  await relay.control.deploy(stack.id);
  await relay.deployer.settled(stack.id);
  const key = (await relay.control.createKey(org.id, { name: "plain" })).key;
  process.stdout.write(`${JSON.stringify({ url: relay.url, key })}\n`);
} else {
  process.stdout.write(`${JSON.stringify({ url: relay.url, server: relay.linkAddress })}\n`);
}
process.on("SIGTERM", () => void relay.stop().then(() => process.exit(0)));
setInterval(() => {}, 1 << 30);
