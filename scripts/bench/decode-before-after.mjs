#!/usr/bin/env node
// What the gateway spends reading one request body before and after a change: JSON.parse and the API's decoder
// (chat completions and the Messages API), from another checkout's built dist/ and this one's, alternating in one
// process on whatever core it runs (pin it: `taskset -c 1`), three rounds of 200,000 each.
//   node scripts/bench/decode-before-after.mjs BEFORE_ROOT [BEFORE_CHAT_MODULE BEFORE_CHAT_EXPORT]
// The chat decoder was relay/http/openai/validate-chat-request.js (validateChatRequest) before issue 40's third
// stop: name it for a tree of that time.
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const [beforeRoot, chatModule = "relay/http/openai/decode-chat-request.js", chatExport = "decodeChatRequest"] = process.argv.slice(2);
if (!beforeRoot) {
  process.stderr.write("usage: decode-before-after.mjs BEFORE_ROOT [BEFORE_CHAT_MODULE BEFORE_CHAT_EXPORT]\n");
  process.exit(2);
}
const load = async (root, module, name) => (await import(join(resolve(root), "dist", module)))[name];
const decoders = {
  "chat before": await load(beforeRoot, chatModule, chatExport),
  "chat after": await load(here, "relay/http/openai/decode-chat-request.js", "decodeChatRequest"),
  "messages before": await load(beforeRoot, "relay/http/anthropic/decode-messages-request.js", "decodeMessagesRequest"),
  "messages after": await load(here, "relay/http/anthropic/decode-messages-request.js", "decodeMessagesRequest"),
};
const bodies = {
  chat: JSON.stringify({ model: "m", messages: [{ role: "system", content: "You are brief." }, { role: "user", content: "Once upon a time" }], max_tokens: 16, stream: true }),
  messages: JSON.stringify({ model: "m", max_tokens: 16, system: "You are brief.", messages: [{ role: "user", content: "Once upon a time" }] }),
};
const N = 200_000;
/** µs per request of `JSON.parse` and `decode`, after a warm-up. */
function measure(decode, body) {
  for (let i = 0; i < 20_000; i++) decode(JSON.parse(body));
  const t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) decode(JSON.parse(body));
  return Number(process.hrtime.bigint() - t) / N / 1000;
}
const results = Object.fromEntries(Object.keys(decoders).map((k) => [k, []]));
for (let round = 0; round < 3; round++) {
  for (const [label, decode] of Object.entries(decoders)) results[label].push(measure(decode, bodies[label.split(" ")[0]]).toFixed(2));
}
for (const [label, runs] of Object.entries(results)) console.log(`${label}: ${runs.join(" / ")} µs`);
