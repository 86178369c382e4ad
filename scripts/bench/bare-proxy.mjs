#!/usr/bin/env node
// The floor of any Node relay (issue 47): a bare pass-through proxy in front of the benchmark's stand-in, with
// nothing a gateway does (no keys, no limits, no parsing): each request's method, path, headers and body piped to
// the upstream over kept-alive connections, and its answer piped back as it comes (a stream chunk by chunk). What the
// gateway costs beyond this is what it does beyond moving bytes. Prints {"port"} once it listens.
//   bare-proxy.mjs UPSTREAM_URL [PORT]
import { Agent, createServer, request } from "node:http";

const upstream = new URL(process.argv[2]);
const port = Number(process.argv[3] ?? 0);
const agent = new Agent({ keepAlive: true, maxSockets: 256 });

const server = createServer((req, res) => {
  const out = request(
    { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host }, agent },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  out.on("error", () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  req.pipe(out);
});
server.keepAliveTimeout = 60_000;
server.listen(port, "127.0.0.1", () => console.log(JSON.stringify({ port: server.address().port })));
