#!/usr/bin/env node
// The floor of the GGUF bench's comparison: what any relay in Node pays on this machine, with none of Makina's
// code. Two roles, each its own process:
//   bare-hop.mjs model SOCKET   a stand-in model process (no model): a request line {"frames":N,"intervalMs":I}
//                               is answered with N text frames, one per I ms, then an end frame (N = 0: the end
//                               at once), newline-delimited JSON as gguf-wire.ts frames are; prints {"socket"}.
//   bare-hop.mjs relay SOCKET   a bare node:http server that sends each POST's body on to that socket (one kept
//                               connection, one request at a time) and answers the frames as JSON (a 1-token
//                               answer) or as server-sent events, one per frame; prints {"url"}.
//   bare-hop.mjs raw SOCKET     less still: a TCP server passing lines to that socket and its lines back, with no
//                               HTTP and no parsing (the least any relay process adds); prints {"port"}.
// The bench times a client straight to the stand-in against the client through the bare relay, alternating
// with its own measures, and the bare relay's CPU per frame at the agent's frame interval.
import { rmSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { connect, createServer } from "node:net";

const [role, socketPath] = process.argv.slice(2);

/** Calls `on` with each line of JSON that comes on `socket`. */
function lines(socket, on) {
  socket.setEncoding("utf8");
  let buffer = "";
  socket.on("data", (chunk) => {
    buffer += chunk;
    for (let i = buffer.indexOf("\n"); i >= 0; i = buffer.indexOf("\n")) {
      const line = buffer.slice(0, i);
      buffer = buffer.slice(i + 1);
      on(JSON.parse(line));
    }
  });
}

const TEXT = " Once upon a time, there was a little girl named Lily. She";

if (role === "model") {
  rmSync(socketPath, { force: true });
  createServer((socket) =>
    lines(socket, ({ frames, intervalMs }) => {
      const end = (n) => socket.write(`${JSON.stringify({ type: "end", finishReason: "length", promptTokens: 25, completionTokens: n })}\n`);
      if (!frames) return void end(1);
      let n = 0;
      const timer = setInterval(() => {
        socket.write(`${JSON.stringify({ type: "text", text: TEXT, promptTokens: 25, completionTokens: ++n })}\n`);
        if (n < frames) return;
        clearInterval(timer);
        end(n);
      }, intervalMs);
    }),
  ).listen(socketPath, () => process.stdout.write(`${JSON.stringify({ socket: socketPath })}\n`));
} else if (role === "relay") {
  const model = connect(socketPath);
  let onFrame = () => {};
  lines(model, (frame) => onFrame(frame));
  createHttpServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const ask = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      if (!ask.frames) {
        onFrame = (frame) => {
          const body = JSON.stringify({ id: "bare", object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: "x" }, finish_reason: frame.finishReason }], usage: { prompt_tokens: frame.promptTokens, completion_tokens: frame.completionTokens } });
          res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body);
        };
      } else {
        res.writeHead(200, { "content-type": "text/event-stream" });
        onFrame = (frame) => {
          if (frame.type === "end") return void res.end("data: [DONE]\n\n");
          res.write(`data: ${JSON.stringify({ id: "bare", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: frame.text } }] })}\n\n`);
        };
      }
      model.write(`${JSON.stringify(ask)}\n`);
    });
  }).listen(0, "127.0.0.1", function () {
    process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${this.address().port}` })}\n`);
  });
} else if (role === "raw") {
  const model = connect(socketPath);
  let client;
  model.on("data", (chunk) => client?.write(chunk));
  createServer((socket) => {
    socket.setNoDelay(true);
    client = socket;
    socket.on("data", (chunk) => model.write(chunk));
  }).listen(0, "127.0.0.1", function () {
    process.stdout.write(`${JSON.stringify({ port: this.address().port })}\n`);
  });
} else {
  process.stderr.write("usage: bare-hop.mjs model|relay|raw SOCKET\n");
  process.exit(2);
}
