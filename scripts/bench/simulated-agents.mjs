#!/usr/bin/env node
// Simulated agents for the fleet benchmark (scripts/bench/fleet-scale.bench.ts), from the built dist/:
//   simulated-agents.mjs MACHINES_JSON FROM COUNT SERVERS CA_SHA256 CA_FILE PER_SECOND
// Each machine of MACHINES_JSON[FROM, FROM+COUNT) links as a real agent does: the agent's own link client
// and failover dialer (the same backoff, answer and welcome timeouts as `makina agent --server A --server B
// --server C`), over a light stand-in for its gRPC dialer (scripts/bench/light-link-dialer.mjs: the same
// protocol on node's http2, one TLS connection per machine). What is simulated is the machine behind the
// link (a stand-in: no runtime, no model): every deployment step succeeds at once, and every inference
// request is answered with one short text and its end. The machines start PER_SECOND a second (0: all at once).
// Prints one JSON line whenever the count of welcomed links changed (at most every 100 ms):
// {"linked": N, "by": {"127.0.0.1:PORT": n, …}}.
import { createHash, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { join } from "node:path";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const { LinkClient } = await import(join(root, "dist/agent/link/link-client.js"));
const { FailoverDialer } = await import(join(root, "dist/agent/link/failover-dialer.js"));
const { encodeAgentMessage, decodeRelayMessage } = await import(join(root, "dist/agent/link/agent-link-codec.js"));
const { AgentMessage, RelayMessage } = await import(join(root, "dist/proto/generated/agent_link.js"));
const { LightLinkDialer } = await import(join(root, "scripts/bench/light-link-dialer.mjs"));
const { Backoff } = await import(join(root, "dist/agent/flow/index.js"));
const { PROTOCOL_VERSION, silentLogger, EMPTY_STEP_RESULT } = await import(join(root, "dist/proto/index.js"));

const { cpuProfile } = await import(join(root, "scripts/bench/cpu-profile.mjs"));
const profile = await cpuProfile("simulated-agents");
const [machinesFile, from, count, servers, caSha256, caFile, perSecond] = process.argv.slice(2);
const machines = JSON.parse(readFileSync(machinesFile, "utf8")).slice(Number(from), Number(from) + Number(count));
const log = silentLogger();
const hardware = { platform: "linux", os: "Simulated", arch: "x64", cpuModel: "stand-in", cpuPhysicalCores: 1, cpuLogicalCores: 1, memoryBytes: 1 << 30, gpus: [], disks: [], accelerators: [] };
// Every field of a step's result (the wire encodes each one), as a real agent's configureEndpoint answers.
const result = { ...EMPTY_STEP_RESULT, contextSize: 4096 };
const usage = { promptTokens: 3, completionTokens: 1 };

const codec = { encodeAgentMessage, decodeRelayMessage, AgentMessage, RelayMessage };
// The CA the install command pinned (checked against its fingerprint here once, as the agent checks it once).
const caPem = caSha256 ? readFileSync(caFile, "utf8") : null;
if (caPem && createHash("sha256").update(new X509Certificate(caPem).raw).digest("hex") !== caSha256) throw new Error(`${caFile} is not the CA ${caSha256}`);
const context = LightLinkDialer.context(caPem);
const agents = machines.map(({ machineId, token }, i) => {
  const dialer = new FailoverDialer({ servers: servers.split(","), dialer: (server) => new LightLinkDialer(server, { machineId, token }, context, codec) });
  const link = new LinkClient({
    dial: dialer.dial,
    onStopped: () => dialer.close(),
    hello: () => ({ type: "hello", protocolVersion: PROTOCOL_VERSION, agentVersion: "0.0.0-simulated", hardware }),
    backoff: new Backoff({ minMs: 250, maxMs: 15_000, firstSpreadMs: 2000 }),
    welcomeTimeoutMs: 5000,
    log,
    onDisconnect: () => {},
    onMessage: (m) => {
      if (m.type === "command") link.send({ type: "result", commandId: m.commandId, result });
      else if (m.type === "infer") {
        link.send({ type: "text", requestId: m.requestId, text: "ok" });
        link.send({ type: "end", requestId: m.requestId, finishReason: "stop", usage });
      }
    },
  });
  if (Number(perSecond) > 0) setTimeout(() => link.start(), (i / Number(perSecond)) * 1000);
  else link.start();
  return { link, dialer };
});

let last = "";
setInterval(() => {
  const by = {};
  let linked = 0;
  for (const { link, dialer } of agents) {
    if (link.state !== "online") continue;
    linked++;
    by[dialer.current] = (by[dialer.current] ?? 0) + 1;
  }
  const line = JSON.stringify({ linked, by });
  if (line !== last) process.stdout.write(`${line}\n`);
  last = line;
}, 100);
// While some are not linked, why (their last errors) goes to stderr every 5 s, with how late this process's
// event loop ran (a simulator too busy to send heartbeats makes the relays drop its links).
const lag = monitorEventLoopDelay();
lag.enable();
setInterval(() => {
  const why = {};
  for (const { link } of agents) if (link.state !== "online") why[`${link.state}: ${link.lastError}`] = (why[`${link.state}: ${link.lastError}`] ?? 0) + 1;
  if (Object.keys(why).length) process.stderr.write(`  simulated agents not linked: ${JSON.stringify(why)}; event loop late by up to ${Math.round(lag.max / 1e6)} ms\n`);
  lag.reset();
}, 5000).unref();
process.on("SIGTERM", () => void profile.save().then(() => Promise.all(agents.map(({ link }) => link.stop()))).then(() => process.exit(0)));
