import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/test-gateway.js";

/** Opens a raw connection to the relay, writes `text`, and resolves with everything it answers until it closes. */
function rawExchange(port: number, text: string): { socket: Socket; answer: Promise<string> } {
  const socket = connect(port, "127.0.0.1");
  socket.write(text);
  const answer = new Promise<string>((resolve) => {
    let got = "";
    socket.on("data", (d) => (got += d.toString("latin1")));
    socket.on("close", () => resolve(got));
    socket.on("error", () => {});
  });
  return { socket, answer };
}

describe("clients that send slowly, or too many connections, cannot hold the relay", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ runtime: "fake", relayFlags: { headerTimeoutMs: 300, bodyTimeoutMs: 600, maxConnections: 4 } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("answers 408 and closes a connection whose headers never end", async () => {
    const { answer } = rawExchange(gw.relay.httpPort, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: ");
    const text = await answer;
    expect(text).toMatch(/^HTTP\/1\.1 408/);
    expect(text).toContain('"code":"request_timeout"');
  });

  it("answers 408 and closes a connection whose body never ends", async () => {
    const { answer } = rawExchange(
      gw.relay.httpPort,
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${gw.apiKey}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model":`,
    );
    expect(await answer).toMatch(/^HTTP\/1\.1 408/);
  });

  it("refuses connections beyond its cap, and serves again once they go", async () => {
    const held = Array.from({ length: 4 }, () => connect(gw.relay.httpPort, "127.0.0.1"));
    await Promise.all(held.map((s) => new Promise((r) => s.once("connect", r))));
    const extra = rawExchange(gw.relay.httpPort, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(await extra.answer).toBe("");
    for (const s of held) s.destroy();
    // Once the relay has seen them close, there is room again.
    await vi.waitFor(async () => {
      const again = rawExchange(gw.relay.httpPort, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
      expect(await again.answer).toMatch(/^HTTP\/1\.1 200/);
    }, { timeout: 5_000, interval: 50 });
  });
});
