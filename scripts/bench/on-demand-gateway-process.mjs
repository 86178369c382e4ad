#!/usr/bin/env node
// The gateway for the on-demand benchmark (scripts/bench/on-demand.mjs), as its own process: relay and agent
// linked in-process (as `makina up` runs them), each GGUF model in its own supervised process, as in production.
//   on-demand-gateway-process.mjs DIR MAX_LOADED NAME=RESIDENCY=MODEL...
// One stack per NAME=RESIDENCY=MODEL (residency `always` or `on_demand`, never unloaded for idleness), the agent
// keeping at most MAX_LOADED runtimes loaded (0: no limit). Prints one JSON line once every stack is deployed:
// the gateway's URL, its admin URL and token, an API key, and each stack's id by name.
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = process.env.MAKINA_BENCH_ROOT ?? join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const { resolveRelayConfig, startRelay } = await import(join(root, "dist/relay/index.js"));
const OP = (await import(join(root, "dist/relay/auth/index.js"))).operatorActor();
const { resolveAgentConfig, startAgent } = await import(join(root, "dist/agent/index.js"));
const { silentLogger } = await import(join(root, "dist/proto/index.js"));

const [dir, maxLoaded, ...specs] = process.argv.slice(2);
const log = silentLogger();
const relay = await startRelay(resolveRelayConfig({ flags: { dataDir: join(dir, "relay"), port: 0, grpcPort: 0, grpcHost: "127.0.0.1" } }), { log });
const org = await relay.control.orgs.create(OP, { name: "bench" });
const { machine, token } = await relay.control.machines.create(OP, { org: org.id, name: "bench" });
const agent = await startAgent(
  resolveAgentConfig({ flags: { server: relay.linkAddress, machineId: machine.id, token, dataDir: join(dir, "agent"), gpu: false, maxContextSize: 2048, parallelSequences: 8, maxLoaded: Number(maxLoaded) }, env: process.env }),
  { log, dial: relay.inProcessDialer({ machineId: machine.id, token }) },
);
await agent.link.whenOnline();
const stacks = {};
for (const spec of specs) {
  const [name, residency, model] = spec.split("=");
  const stack = await relay.control.stacks.create(OP, { org: org.id, name, machine: machine.id, runtime: "gguf", model, modelId: name, residency, idleUnloadS: 0 });
  await relay.control.stacks.deploy(OP, stack.id);
  await relay.deployer.settled(stack.id);
  const deployed = await relay.control.stacks.get(OP, stack.id);
  if (deployed.state !== "deployed") throw new Error(`the bench stack ${name} did not deploy: ${deployed.stateError}`);
  stacks[name] = stack.id;
}
const { key } = await relay.control.keys.create(OP, org.id, {});
process.stdout.write(`${JSON.stringify({ url: relay.url, adminUrl: relay.adminUrl, adminToken: relay.adminToken, key, stacks, threads: agent.config.threads })}\n`);

process.on("SIGTERM", () => {
  setTimeout(() => process.exit(1), 10_000).unref();
  void agent
    .stop()
    .then(() => relay.stop())
    .finally(() => process.exit(0));
});
setInterval(() => {}, 1 << 30);
