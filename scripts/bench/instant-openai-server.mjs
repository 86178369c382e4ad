#!/usr/bin/env node
// An instant OpenAI-compatible server for the gateway benchmark: it answers at once, so what a request
// through the gateway costs beyond it is the gateway's own cost. A fixed non-streamed completion, or
// streamed chunks with usage: as many as the request's max_tokens, else CHUNKS (default 16).
// With STANDIN_APART=1 a streamed answer's events are written apart, one a turn of the event loop, as a server
// generating tokens writes each as it comes (a proxy in front then reads and writes each on its own).
//   instant-openai-server.mjs PORT [CHUNKS]
import { createServer } from "node:http";

const port = Number(process.argv[2] ?? 0);
const chunks = Number(process.argv[3] ?? 16);
const model = "instant";
const completion = JSON.stringify({
  id: "chatcmpl-instant",
  object: "chat.completion",
  created: 0,
  model,
  choices: [{ index: 0, message: { role: "assistant", content: "Hello from the stand-in." }, finish_reason: "stop" }],
  usage: { prompt_tokens: 9, completion_tokens: 6, total_tokens: 15 },
});
const event = (payload) => `data: ${JSON.stringify(payload)}\n\n`;
const chunk = (delta, finish) => ({ id: "chatcmpl-instant", object: "chat.completion.chunk", created: 0, model, choices: [{ index: 0, delta, finish_reason: finish }] });
const apart = process.env.STANDIN_APART === "1";
const streams = new Map();
const eventsOf = new Map();
const streamOf = (n) => {
  let s = streams.get(n);
  if (!s) {
    s = Buffer.from(
      event(chunk({ role: "assistant", content: "" }, null)) +
        Array.from({ length: n }, (_, i) => event(chunk({ content: ` word${i}` }, null))).join("") +
        event(chunk({}, "stop")) +
        event({ id: "chatcmpl-instant", object: "chat.completion.chunk", created: 0, model, choices: [], usage: { prompt_tokens: 9, completion_tokens: n, total_tokens: 9 + n } }) +
        "data: [DONE]\n\n",
    );
    streams.set(n, s);
  }
  return s;
};
/** A streamed answer of `n` chunks as its events, each its own buffer. */
const eventList = (n) => {
  let list = eventsOf.get(n);
  if (!list) {
    const whole = streamOf(n).toString();
    list = whole.split(/(?<=\n\n)/).map((e) => Buffer.from(e));
    eventsOf.set(n, list);
  }
  return list;
};

/** Writes the events one a turn of the event loop, then ends the answer (or stops when the client left). */
function writeApart(res, list, i = 0) {
  if (res.destroyed) return;
  if (i === list.length) return void res.end();
  res.write(list[i]);
  setImmediate(() => writeApart(res, list, i + 1));
}

const models = JSON.stringify({ object: "list", data: [{ id: model, object: "model", created: 0, owned_by: "bench" }] });

const server = createServer((req, res) => {
  if (req.method === "GET") {
    res.writeHead(200, { "content-type": "application/json" }).end(req.url === "/v1/models" ? models : "{}");
    return;
  }
  let raw = "";
  req.setEncoding("utf8");
  req.on("data", (c) => (raw += c));
  req.on("end", () => {
    const max = Number(/"max_tokens":(\d+)/.exec(raw)?.[1] ?? chunks);
    if (raw.includes('"stream":true') && apart) writeApart(res.writeHead(200, { "content-type": "text/event-stream" }), eventList(Math.min(max, 4096)));
    else if (raw.includes('"stream":true')) res.writeHead(200, { "content-type": "text/event-stream" }).end(streamOf(Math.min(max, 4096)));
    else res.writeHead(200, { "content-type": "application/json" }).end(completion);
  });
});
server.keepAliveTimeout = 65_000;
server.listen(port, "127.0.0.1", () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
