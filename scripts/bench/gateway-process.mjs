#!/usr/bin/env node
// One gateway process for the benchmark, from the built dist/:
//   gateway-process.mjs one DIR UPSTREAM      relay and agent in one process, linked in-process (as `makina up` runs them)
//   gateway-process.mjs relay DIR UPSTREAM    the relay alone; prints what an agent needs to join
//   gateway-process.mjs agent DIR SERVER MACHINE_ID TOKEN
// The relay side creates an organization, a machine, an `openai`-kind stack in front of UPSTREAM (the
// instant stand-in's base URL) and two API keys (one without limits, one with RPM/TPM limits no run
// reaches), then prints them as one JSON line once the stack is deployed.
// MAKINA_BENCH_LOG_FILE sends the logs (info level, as in production) to that file.
import { createWriteStream } from "node:fs";
import { join } from "node:path";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const { resolveRelayConfig, startRelay } = await import(join(root, "dist/relay/index.js"));
// The operator (the admin token), as the control plane knows it.
const OP = (await import(join(root, "dist/relay/auth/index.js"))).operatorActor();
const { resolveAgentConfig, startAgent } = await import(join(root, "dist/agent/index.js"));
const { createLogger, silentLogger } = await import(join(root, "dist/proto/index.js"));

const [mode, dir, ...rest] = process.argv.slice(2);
const logFile = process.env.MAKINA_BENCH_LOG_FILE;
const log = logFile ? createLogger({ level: "info", write: ((s) => (line) => s.write(line + "\n"))(createWriteStream(logFile, { flags: "a" })) }) : silentLogger();

async function agent(server, machineId, token, dial) {
  const a = await startAgent(resolveAgentConfig({ flags: { server, machineId, token, dataDir: join(dir, `agent-${process.pid}`), gpu: false } }), { log, dial });
  await a.link.whenOnline();
  return a;
}

if (mode === "agent") {
  const [server, machineId, token] = rest;
  await agent(server, machineId, token);
  process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
} else {
  const [upstream] = rest;
  const relay = await startRelay(resolveRelayConfig({ flags: { dataDir: join(dir, "relay"), port: 0, grpcPort: 0, grpcHost: "127.0.0.1" } }), { log });
  const org = await relay.control.orgs.create(OP, { name: "bench" });
  const { machine, token } = await relay.control.machines.create(OP, { org: org.id, name: "bench" });
  const info = { url: relay.url, server: relay.linkAddress, machineId: machine.id, token };
  if (mode === "relay") {
    process.stdout.write(`${JSON.stringify({ joining: info })}\n`);
    await new Promise((resolve) => {
      const check = setInterval(() => relay.registry.get(machine.id) && (clearInterval(check), resolve()), 20);
    });
  } else {
    // As `makina up` does: the agent reaches the relay in the same process by a direct call.
    await agent(relay.linkAddress, machine.id, token, relay.inProcessDialer({ machineId: machine.id, token }));
  }
  const stack = await relay.control.stacks.create(OP, { org: org.id, name: "instant", machine: machine.id, runtime: "openai", model: `${upstream}#instant`, modelId: "instant" });
  await relay.control.stacks.deploy(OP, stack.id);
  await relay.deployer.settled(stack.id);
  const deployed = await relay.control.stacks.get(OP, stack.id);
  if (deployed.state !== "deployed") throw new Error(`the bench stack did not deploy: ${deployed.stateError}`);
  const plain = (await relay.control.keys.create(OP, org.id, { name: "plain" })).key;
  const limited = (await relay.control.keys.create(OP, org.id, { name: "limited", rpm: 10_000_000, tpm: 1_000_000_000 })).key;
  // A key with a token budget it never reaches: what checking and settling a budget costs.
  const budgeted = (await relay.control.keys.create(OP, org.id, { name: "budgeted", budget: { tokens: 1e15, period: "month" } })).key;
  process.stdout.write(`${JSON.stringify({ url: relay.url, plain, limited, budgeted })}\n`);
}
process.on("SIGTERM", () => process.exit(0));
setInterval(() => {}, 1 << 30);
