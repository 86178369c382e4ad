import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createTcpServer, type Server as TcpServer } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pinnedFetch } from "../../agent/models/pinned-fetch.js";

// The download's requests go only to the addresses a check passed: here two local servers on one port stand
// for what a name may lead to (127.0.0.1 and 127.0.0.2), and a raw socket for a server that answers oddly.
describe("a request pinned to checked addresses", () => {
  const servers: (Server | TcpServer)[] = [];
  let port: number;
  let odd: number;

  beforeAll(async () => {
    const answering = (who: string) =>
      createHttpServer({ keepAliveTimeout: 60_000 }, (req, res) => res.writeHead(200, { "content-type": "text/plain" }).end(`${who} ${req.headers.host}`));
    const first = answering("first");
    await new Promise<void>((r) => first.listen(0, "127.0.0.1", r));
    port = (first.address() as AddressInfo).port;
    const second = answering("second");
    await new Promise<void>((r) => second.listen(port, "127.0.0.2", r));
    // A server answering statuses a fetch Response cannot hold: 999, and 205 with a body.
    const raw = createTcpServer((socket) =>
      socket.once("data", (d) => socket.end(d.toString().startsWith("GET /999") ? "HTTP/1.1 999 Odd\r\ncontent-length: 2\r\n\r\nhi" : "HTTP/1.1 205 Reset\r\ncontent-length: 2\r\n\r\nhi")),
    );
    await new Promise<void>((r) => raw.listen(0, "127.0.0.1", r));
    odd = (raw.address() as AddressInfo).port;
    servers.push(first, second, raw);
  });
  afterAll(() => {
    for (const s of servers) s.close();
  });

  it("connects to the pinned address whatever the name, one connection per request (no pooled socket to another address)", async () => {
    const url = new URL(`http://cdn.example:${port}/file`);
    const a = await pinnedFetch(url, ["127.0.0.1"], { headers: {} });
    expect(await a.text()).toBe(`first cdn.example:${port}`);
    // The same host and port right after, pinned elsewhere: a kept-alive socket to the first must not carry it.
    const b = await pinnedFetch(url, ["127.0.0.2"], { headers: {} });
    expect(await b.text()).toBe(`second cdn.example:${port}`);
  });

  it("rejects a status a fetch Response cannot hold, and empties a body where there must be none, without throwing out of the agent", async () => {
    await expect(pinnedFetch(new URL(`http://odd.example:${odd}/999`), ["127.0.0.1"], { headers: {} })).rejects.toThrow("answered with status 999");
    const reset = await pinnedFetch(new URL(`http://odd.example:${odd}/205`), ["127.0.0.1"], { headers: {} });
    expect([reset.status, reset.body]).toEqual([205, null]);
  });

  it("stops when its signal aborts", async () => {
    const controller = new AbortController();
    controller.abort(new Error("gone"));
    await expect(pinnedFetch(new URL(`http://cdn.example:${port}/file`), ["127.0.0.1"], { headers: {}, signal: controller.signal })).rejects.toThrow();
  });
});
