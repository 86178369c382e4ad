/**
 * What the seal on the relays' bus costs per message (relay/cluster/bus-seal.ts): a token reply and a request
 * with a 256-character prompt, sealed by one relay and opened by another, against the JSON encoding and
 * decoding the bus did without it. 100,000 of each, three rounds, one after another with no turn of the event loop
 * between, so no cipher is made ahead: the cost of a seal made on demand (scripts/bench/bus-hop.mjs measures the
 * hop as it crosses). Needs dist/ (npm run build).
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(fileURLToPath(import.meta.url), "..", "..", "..");
const { BusSeal } = await import(join(root, "dist", "relay", "cluster", "bus-seal.js"));
const secret = "x".repeat(43);
const [a, b] = [new BusSeal(secret, "rly_aaaaaaaaaaaa"), new BusSeal(secret, "rly_bbbbbbbbbbbb")];
const subject = "makina.reply.rly_aaaaaaaaaaaa.12";
const bodies = {
  "a token reply": { s: 12, e: { type: "token", text: " the" } },
  "a request (256-character prompt)": { from: "rly_bbbbbbbbbbbb", n: 1234, machine: "mch_aaaaaaaaaaaa", stack: "stk_aaaaaaaaaaaa", input: { messages: [{ role: "user", content: "Hello there, how are you today? ".repeat(8) }], maxTokens: 64 }, firstTokenTimeoutMs: 120000, steps: 1, credit: 32 },
};
const [encoder, decoder] = [new TextEncoder(), new TextDecoder()];
const N = 100_000;
const perMessage = (f) => {
  const t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) f();
  return Number(process.hrtime.bigint() - t) / N / 1000;
};
console.log(`| message | JSON out and in (µs) | sealed and opened (µs) | the seal's cost (µs) |\n|---|---|---|---|`);
for (const [name, body] of Object.entries(bodies)) {
  for (let round = 0; round < 3; round++) {
    const plain = perMessage(() => JSON.parse(decoder.decode(encoder.encode(JSON.stringify(body)))));
    const sealed = perMessage(() => {
      if (typeof a.open(subject, b.seal(subject, body)) === "string") throw new Error("did not open");
    });
    console.log(`| ${name} | ${plain.toFixed(2)} | ${sealed.toFixed(2)} | ${(sealed - plain).toFixed(2)} |`);
  }
}
