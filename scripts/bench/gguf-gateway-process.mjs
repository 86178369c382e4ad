#!/usr/bin/env node
// The gateway for the GGUF benchmark, as its own process: relay and agent linked in-process (as `makina up`
// runs them), serving one GGUF stack whose model runs in its own supervised process, as in production.
//   gguf-gateway-process.mjs DIR MODEL
// Prints one JSON line once the stack is deployed: the gateway's URL, an API key, the model process's socket
// and pid, and the thread count the model got. MAKINA_BENCH_ROOT runs another checkout's built dist/ (the tree
// before a change, for before/after tables from the same session). MAKINA_BENCH_STAGES=1 times each request's
// stages inside the process (see `stageClock`) and prints them as a JSON line on SIGUSR2.
import { AsyncLocalStorage } from "node:async_hooks";
import http from "node:http";
import { join } from "node:path";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = process.env.MAKINA_BENCH_ROOT ?? join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const { resolveRelayConfig, startRelay } = await import(join(root, "dist/relay/index.js"));
// The operator (the admin token), as the control plane knows it.
const OP = (await import(join(root, "dist/relay/auth/index.js"))).operatorActor();
const { resolveAgentConfig, startAgent } = await import(join(root, "dist/agent/index.js"));
const { silentLogger } = await import(join(root, "dist/proto/index.js"));

const [dir, model] = process.argv.slice(2);
const stages = process.env.MAKINA_BENCH_STAGES === "1" ? stageClock() : undefined;
// MAKINA_BENCH_STREAM_INTERVAL_MS: the agent's stream interval (a tree that has one), else its default.
const interval = process.env.MAKINA_BENCH_STREAM_INTERVAL_MS ? { streamIntervalMs: Number(process.env.MAKINA_BENCH_STREAM_INTERVAL_MS) } : {};
const log = silentLogger();
const relay = await startRelay(resolveRelayConfig({ flags: { dataDir: join(dir, "relay"), port: 0, grpcPort: 0, grpcHost: "127.0.0.1" } }), { log });
const org = await relay.control.orgs.create(OP, { name: "bench" });
const { machine, token } = await relay.control.machines.create(OP, { org: org.id, name: "bench" });
const agent = await startAgent(
  resolveAgentConfig({ flags: { server: relay.linkAddress, machineId: machine.id, token, dataDir: join(dir, "agent"), gpu: false, maxContextSize: 2048, parallelSequences: 8, ...interval }, env: process.env }),
  { log, dial: relay.inProcessDialer({ machineId: machine.id, token }) },
);
await agent.link.whenOnline();
const stack = await relay.control.stacks.create(OP, { org: org.id, name: "bench", machine: machine.id, runtime: "gguf", model, modelId: "bench" });
await relay.control.stacks.deploy(OP, stack.id);
await relay.deployer.settled(stack.id);
const deployed = await relay.control.stacks.get(OP, stack.id);
if (deployed.state !== "deployed") throw new Error(`the bench stack did not deploy: ${deployed.stateError}`);
const { key } = await relay.control.keys.create(OP, org.id, {});
const runtime = agent.host.runtime(stack.id);
const modelPid = agent.host.list()[0].pid;
stages?.watch(relay.registry.get(machine.id), agent.inference, runtime);
process.stdout.write(`${JSON.stringify({ url: relay.url, key, socket: runtime.endpoint.replace(/^unix:/, ""), contextSize: runtime.contextSize, modelPid, threads: agent.config.threads })}\n`);

// SIGTERM: stop the model process and exit, so that `--cpu-prof` writes both processes' profiles.
process.on("SIGTERM", () => {
  setTimeout(() => process.exit(1), 10_000).unref();
  void agent
    .stop()
    .then(() => relay.stop())
    .finally(() => process.exit(0));
});
setInterval(() => {}, 1 << 30);

/**
 * Times of each request's stages, on the clock every process of the bench shares (performance.timeOrigin + now):
 *   arrived   the HTTP server emitted the request
 *   infer     the relay sent it over the link (session.infer): key, body, validation, plan, limits, admission done
 *   dispatch  the agent's dispatcher took it from the link
 *   runtime   the agent called the model process's client (GgufProcessRuntime.chat)
 *   first     the first event came back from the model process (its socket, the prompt, the first token)
 *   end       the end came back from the model process
 *   finished  the relay's response was handed to the socket whole
 * keyed by the response's x-request-id, which the client records with its own times. The request's record
 * travels with it through the in-process link in an AsyncLocalStorage.
 */
function stageClock() {
  const now = () => performance.timeOrigin + performance.now();
  const current = new AsyncLocalStorage();
  const done = [];
  const emit = http.Server.prototype.emit;
  http.Server.prototype.emit = function (event, req, res) {
    if (event !== "request" || !req.url?.startsWith("/v1/")) return emit.apply(this, arguments);
    const record = { arrived: now() };
    res.once("finish", () => {
      record.finished = now();
      record.id = String(res.getHeader("x-request-id"));
      done.push(record);
    });
    return current.run(record, () => emit.apply(this, arguments));
  };
  process.on("SIGUSR2", () => process.stdout.write(`${JSON.stringify({ stages: done.splice(0) })}\n`));
  const stamp = (name) => {
    const record = current.getStore();
    if (record && record[name] === undefined) record[name] = now();
  };
  return {
    watch(session, dispatcher, runtime) {
      const infer = session.infer.bind(session);
      session.infer = (...args) => (stamp("infer"), infer(...args));
      const start = dispatcher.start.bind(dispatcher);
      dispatcher.start = (...args) => (stamp("dispatch"), start(...args));
      const chat = runtime.chat.bind(runtime);
      runtime.chat = async function* (...args) {
        stamp("runtime");
        for await (const ev of chat(...args)) {
          stamp(ev.type === "end" ? "end" : "first");
          yield ev;
        }
      };
    },
  };
}
