import { afterEach, describe, expect, it, vi } from "vitest";
import { createLogger } from "../../proto/index.js";
import { PeerLinks, type PeerConnection } from "../../relay/cluster/peer-links.js";

/**
 * The relays' direct connections (relay/cluster/peer-links.ts), real TLS over loopback: only a relay holding
 * the shared secret, and only the relay expected at an address, is talked to.
 */
describe("direct connections between relays", () => {
  const opened: PeerLinks[] = [];
  afterEach(() => {
    for (const p of opened.splice(0)) p.close();
  });

  /** A relay's end, recording what reaches it and its log lines. */
  const relay = async (relayId: string, secret: string) => {
    const incoming: { from: string; message: unknown }[] = [];
    const answered: unknown[] = [];
    const lines: string[] = [];
    let taken: PeerConnection | undefined;
    const links = await PeerLinks.listen({
      host: "127.0.0.1",
      port: 0,
      relayId,
      secret,
      maxMessageChars: 1024 * 1024,
      log: createLogger({ level: "debug", write: (line) => lines.push(line) }),
      handlers: {
        incoming(connection, message) {
          taken = connection;
          incoming.push({ from: connection.relayId, message });
        },
        answered: (_connection, message) => answered.push(message),
      },
    });
    opened.push(links);
    return { links, incoming, answered, lines, taken: () => taken };
  };

  it("links two relays holding the same secret: requests one way, answers back on the same connection", async () => {
    const [a, b] = [await relay("rly_a", "shared secret"), await relay("rly_b", "shared secret")];
    expect(a.links.address).toMatch(/^127\.0\.0\.1:\d+$/);
    b.links.know("rly_a", a.links.address);
    await vi.waitFor(() => expect(b.links.open("rly_a")).toBeDefined(), { timeout: 5000, interval: 20 });
    b.links.open("rly_a")!.send({ q: { line: "one\ntwo", n: 1 } });
    await vi.waitFor(() => expect(a.incoming).toEqual([{ from: "rly_b", message: { q: { line: "one\ntwo", n: 1 } } }]), { timeout: 5000, interval: 20 });
    a.taken()!.send({ n: 1, r: { s: 0 } });
    await vi.waitFor(() => expect(b.answered).toEqual([{ n: 1, r: { s: 0 } }]), { timeout: 5000, interval: 20 });
    // A relay gone: its connection closes and the other end hears of it.
    let closed = false;
    a.taken()!.onClose(() => (closed = true));
    b.links.forget("rly_a");
    await vi.waitFor(() => expect(closed).toBe(true), { timeout: 5000, interval: 20 });
    expect(b.links.open("rly_a")).toBeUndefined();
  });

  it("refuses a relay without the secret, and a relay that is not the one expected at an address", async () => {
    const [a, intruder, c] = [await relay("rly_a", "shared secret"), await relay("rly_x", "another secret"), await relay("rly_c", "shared secret")];
    intruder.links.know("rly_a", a.links.address);
    await vi.waitFor(() => expect(intruder.lines.join("\n")).toContain("cannot be dialed directly"), { timeout: 5000, interval: 20 });
    expect(intruder.links.open("rly_a")).toBeUndefined();
    // Told rly_a is where rly_c listens: rly_c names itself in the handshake and is left.
    a.links.know("rly_b", c.links.address);
    await vi.waitFor(() => expect(a.lines.join("\n")).toContain("cannot be dialed directly"), { timeout: 5000, interval: 20 });
    expect(a.links.open("rly_b")).toBeUndefined();
    expect(a.incoming).toEqual([]);
    expect(c.incoming).toEqual([]);
  });

  it("takes a message that arrives in many parts whole, and ends a connection sending one larger than it takes", async () => {
    const [a, b] = [await relay("rly_a", "s"), await relay("rly_b", "s")];
    b.links.know("rly_a", a.links.address);
    await vi.waitFor(() => expect(b.links.open("rly_a")).toBeDefined(), { timeout: 5000, interval: 20 });
    const text = "x".repeat(600_000);
    expect(b.links.open("rly_a")!.send({ q: text })).toBe(true);
    await vi.waitFor(() => expect(a.incoming).toEqual([{ from: "rly_b", message: { q: text } }]), { timeout: 5000, interval: 20 });
    // Over the limit: not sent by a relay that knows it, and a connection that sends one anyway is ended.
    expect(b.links.open("rly_a")!.send({ q: "x".repeat(2_000_000) })).toBe(false);
    (b.links.open("rly_a") as unknown as { socket: { write(s: string): void } }).socket.write(`{"q":"${"x".repeat(1_100_000)}`);
    await vi.waitFor(() => expect(b.links.open("rly_a")).toBeUndefined(), { timeout: 5000, interval: 20 });
    expect(a.lines.join("\n")).toContain("larger than any request");
  });

  it("ends a connection that sends what is not JSON", async () => {
    const [a, b] = [await relay("rly_a", "s"), await relay("rly_b", "s")];
    b.links.know("rly_a", a.links.address);
    await vi.waitFor(() => expect(b.links.open("rly_a")).toBeDefined(), { timeout: 5000, interval: 20 });
    const connection = b.links.open("rly_a")!;
    (connection as unknown as { socket: { write(s: string): void } }).socket.write("not json\n");
    await vi.waitFor(() => expect(b.links.open("rly_a")).toBeUndefined(), { timeout: 5000, interval: 20 });
    expect(a.lines.join("\n")).toContain("not JSON");
  });
});
