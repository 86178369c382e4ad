import { once } from "node:events";
import { Agent, createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readJsonBody } from "../../relay/http/read-json-body.js";
import { MakinaError } from "../../proto/index.js";

/** A server that answers each request with the body it read, or the code of the error reading it gave. */
let server: Server;
let port: number;
const LIMIT = 1024;

beforeAll(async () => {
  server = createServer((req, res) => {
    readJsonBody(req, LIMIT).then(
      (body) => res.end(JSON.stringify({ body })),
      (err: unknown) => res.end(JSON.stringify({ code: MakinaError.from(err).code })),
    );
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  port = (server.address() as AddressInfo).port;
});
afterAll(() => server?.close());

/**
 * Sends a POST whose body is written in `pieces`, `gapMs` apart (Node's client sends one piece with a
 * Content-Length, several chunked, unless `headers` say otherwise). Resolves with the answer, and with `agent`, whether the
 * request went on a connection kept from an earlier one.
 */
function post(pieces: Buffer[], { gapMs = 0, headers = {}, agent }: { gapMs?: number; headers?: Record<string, string>; agent?: Agent } = {}): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const req = request({ port, host: "127.0.0.1", method: "POST", agent, headers: { "content-type": "application/json", ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ ...(JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>), ...(agent && req.reusedSocket ? { reused: true } : {}) }));
    });
    req.on("error", reject);
    void (async () => {
      for (const [i, piece] of pieces.entries()) {
        if (i > 0 && gapMs) await new Promise((r) => setTimeout(r, gapMs));
        if (i === pieces.length - 1) req.end(piece);
        else req.write(piece);
      }
    })();
  });
}

describe("reading a JSON request body", () => {
  it("reads a body that comes with its headers, request after request on one kept connection", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      for (let i = 0; i < 3; i++) {
        const text = JSON.stringify({ model: "m", n: i });
        expect(await post([Buffer.from(text)], { agent, headers: { "content-length": String(Buffer.byteLength(text)) } })).toEqual({ body: { model: "m", n: i }, ...(i > 0 ? { reused: true } : {}) });
      }
      // Chunked, whole in one packet: read at once too.
      expect(await post([Buffer.from('{"model":"c"}')], { agent, headers: { "transfer-encoding": "chunked" } })).toEqual({ body: { model: "c" }, reused: true });
    } finally {
      agent.destroy();
    }
  });

  it("reads a body that comes in pieces after its headers", async () => {
    const pieces = ['{"model":', '"m", "text": "', "é".repeat(50), '"}'].map((p) => Buffer.from(p));
    expect(await post(pieces, { gapMs: 20 })).toEqual({ body: { model: "m", text: "é".repeat(50) } });
  });

  it("refuses a body past the limit, whether it says its length, streams in pieces, or comes whole in one chunk", async () => {
    const big = Buffer.from(JSON.stringify({ text: "x".repeat(LIMIT) }));
    expect(await post([big], { headers: { "content-length": String(big.length) } })).toEqual({ code: "request_too_large" });
    expect(await post([big.subarray(0, 600), big.subarray(600)], { gapMs: 20 })).toEqual({ code: "request_too_large" });
    expect(await post([big], { headers: { "transfer-encoding": "chunked" } })).toEqual({ code: "request_too_large" });
  });

  it("reads a gzip body, and refuses bytes that are not JSON", async () => {
    const zipped = gzipSync(JSON.stringify({ model: "z" }));
    expect(await post([zipped], { headers: { "content-encoding": "gzip", "content-length": String(zipped.length) } })).toEqual({ body: { model: "z" } });
    expect(await post([Buffer.from("{not json")], { headers: { "content-length": "9" } })).toEqual({ code: "invalid_json" });
  });
});
