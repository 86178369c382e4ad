/**
 * What authenticating the relays' bus adds to a hop over NATS (issue 41's performance point), in one run,
 * alternating: relay A sends a hop request (a 256-character prompt) to relay B on a real nats-server, B answers
 * with one batched reply (a token, the end, the usage), A reads it. Each round trip goes either sealed (BusSeal,
 * as the relays do: relay/cluster/bus-seal.ts) or as the bus did before the seal (JSON in plain text), in turn,
 * 4,000 of each after a warm-up, five rounds (the client's turn between an answer and the next request). Both relays run in this one process, so a round trip carries
 * all four of the seal's steps (seal and open, both ways) on its one thread, as the hop's critical path does
 * across two relays. Needs dist/ (npm run build) and Debian's nats-server.
 */
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { connect } from "@nats-io/transport-node";

const root = join(fileURLToPath(import.meta.url), "..", "..", "..");
const { BusSeal } = await import(join(root, "dist", "relay", "cluster", "bus-seal.js"));

const port = await new Promise((resolve) => {
  const s = createServer().listen(0, "127.0.0.1", () => {
    const { port } = s.address();
    s.close(() => resolve(port));
  });
});
const server = spawn("nats-server", ["-a", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
const [a, b] = await (async () => {
  for (let i = 0; ; i++) {
    try {
      return [await connect({ servers: `127.0.0.1:${port}` }), await connect({ servers: `127.0.0.1:${port}` })];
    } catch (err) {
      if (i > 50) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
})();

const secret = "x".repeat(43);
const [sealA, sealB] = [new BusSeal(secret, "rly_aaaaaaaaaaaa"), new BusSeal(secret, "rly_bbbbbbbbbbbb")];
const [encoder, decoder] = [new TextEncoder(), new TextDecoder()];
const plain = { seal: (_subject, body) => encoder.encode(JSON.stringify(body)), open: (_subject, data) => ({ body: JSON.parse(decoder.decode(data)) }) };
// Each relay seals in the lane of the relay it addresses, as FleetBus does.
const sealed = (seal, to) => ({
  seal: (subject, body) => seal.seal(subject, body, to),
  open: (subject, data) => {
    const opened = seal.open(subject, data);
    if (typeof opened === "string") throw new Error(`dropped: ${opened}`);
    return opened;
  },
});
const ways = { plain: { a: plain, b: plain }, sealed: { a: sealed(sealA, "rly_bbbbbbbbbbbb"), b: sealed(sealB, "rly_aaaaaaaaaaaa") } };

const hop = "makina.hop.rly_bbbbbbbbbbbb";
let way = ways.plain;
b.subscribe(hop, {
  callback: (_err, msg) => {
    const request = way.b.open(msg.subject, msg.data).body;
    const subject = `makina.reply.rly_aaaaaaaaaaaa.${request.n}`;
    const s = request.n;
    const batch = [
      { s, e: { type: "token", text: " the" } },
      { s, e: { type: "end", finishReason: "stop" } },
      { s, usage: { promptTokens: 64, completionTokens: 1 } },
    ];
    b.publish(subject, way.b.seal(subject, { batch }));
  },
});
const waiting = new Map();
a.subscribe("makina.reply.rly_aaaaaaaaaaaa.*", {
  callback: (_err, msg) => {
    const { batch } = way.a.open(msg.subject, msg.data).body;
    waiting.get(batch[0].s)?.();
  },
});
await a.flush();
await b.flush();

let n = 0;
const roundTrip = () =>
  new Promise((resolve) => {
    const id = ++n;
    const started = process.hrtime.bigint();
    waiting.set(id, () => {
      waiting.delete(id);
      resolve(Number(process.hrtime.bigint() - started) / 1e6);
    });
    const body = { from: "rly_aaaaaaaaaaaa", n: id, machine: "mch_aaaaaaaaaaaa", stack: "stk_aaaaaaaaaaaa", input: { messages: [{ role: "user", content: "Hello there, how are you today? ".repeat(8) }], maxTokens: 64 }, firstTokenTimeoutMs: 120000, steps: 1, credit: 32 };
    a.publish(hop, way.a.seal(hop, body));
  });

const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const mean = (xs) => xs.reduce((s, x) => s + x, 0) / xs.length;
const N = 4000;
console.log("| round | plain p50 / mean (ms) | sealed p50 / mean (ms) | added p50 / mean (µs) |\n|---|---|---|---|");
const added = [];
for (let round = 0; round <= 5; round++) {
  const times = { plain: [], sealed: [] };
  for (let i = 0; i < (round === 0 ? 500 : N); i++) {
    for (const name of i % 2 ? ["sealed", "plain"] : ["plain", "sealed"]) {
      way = ways[name];
      times[name].push(await roundTrip());
      // The client's turn between one answer and its next request (one at a time, as the topology bench's).
      await new Promise((r) => setImmediate(r));
    }
  }
  // Round 0 warms both ways up and is not reported.
  if (round === 0) continue;
  const [p, s] = [times.plain, times.sealed];
  added.push((median(s) - median(p)) * 1000);
  console.log(`| ${round} | ${median(p).toFixed(3)} / ${mean(p).toFixed(3)} | ${median(s).toFixed(3)} / ${mean(s).toFixed(3)} | ${((median(s) - median(p)) * 1000).toFixed(0)} / ${((mean(s) - mean(p)) * 1000).toFixed(0)} |`);
}
console.log(`\nThe seal's added p50, median of the ${added.length} rounds: ${median(added).toFixed(0)} µs`);
await a.close();
await b.close();
server.kill();
