import { describe, expect, it } from "vitest";
import { Backoff } from "../../agent/flow/backoff.js";
import { FailoverDialer } from "../../agent/link/failover-dialer.js";
import type { GrpcDialer } from "../../agent/link/grpc-dialer.js";
import { CreditGate } from "../../agent/flow/credit-gate.js";
import { SlotPool } from "../../agent/runtimes/slot-pool.js";
import { LinkClient, type Hello } from "../../agent/link/link-client.js";
import { MakinaError, PROTOCOL_VERSION, silentLogger, type LinkEnd, type RelayToAgent } from "../../proto/index.js";

describe("reconnect backoff", () => {
  it("doubles up to the cap, with full jitter between the minimum and the ceiling", () => {
    const top = new Backoff({ minMs: 100, maxMs: 1000, random: () => 0.999999 });
    expect(Array.from({ length: 6 }, () => top.next())).toEqual([100, 200, 400, 800, 1000, 1000]);
    const bottom = new Backoff({ minMs: 100, maxMs: 1000, random: () => 0 });
    expect(Array.from({ length: 4 }, () => bottom.next())).toEqual([100, 100, 100, 100]);
  });

  it("spreads the first delay after a reset when told to, so machines that lost one relay do not all dial at once", () => {
    const spread = (r: number) => new Backoff({ minMs: 100, maxMs: 10_000, firstSpreadMs: 2000, random: () => r });
    expect([spread(0).next(), spread(0.5).next(), spread(0.999999).next()]).toEqual([100, 1100, 2100]);
    // Then doubling from beyond the spread (100 · 2⁵ = 3200), up to the cap.
    const b = spread(0.999999);
    expect([b.next(), b.next(), b.next(), b.next(), b.next()]).toEqual([2100, 3200, 6400, 10_000, 10_000]);
  });

  it("starts over after a successful connection", () => {
    const b = new Backoff({ minMs: 10, maxMs: 1000, random: () => 0.999999 });
    b.next();
    b.next();
    b.reset();
    expect(b.next()).toBe(10);
  });
});

describe("failing over between relays", () => {
  it("sends each new link to the relay after the last one, starting at a random one", () => {
    const dialed: string[] = [];
    const released: string[] = [];
    const relay = (server: string) => ({
      server,
      dialer: { dial: () => (dialed.push(server), { send: () => {}, close: () => {} }), close: () => {}, release: () => released.push(server) } as unknown as GrpcDialer,
    });
    const failover = new FailoverDialer([relay("a:1"), relay("b:1"), relay("c:1")], () => 0.5);
    const agent = { send: () => {}, close: () => {} };
    for (let i = 0; i < 4; i++) failover.dial(agent);
    expect(dialed).toEqual(["b:1", "c:1", "a:1", "b:1"]);
    expect(failover.current).toBe("b:1");
    // Each dial closes the connections to the other relays: one opening to a relay left behind is not kept.
    expect(released.slice(-2).sort()).toEqual(["a:1", "c:1"]);
  });
});

describe("waiting for the relay's welcome", () => {
  /** A link client whose every dial is recorded; `answer` decides what each relay does with its link. */
  function client(answer: (agent: LinkEnd<RelayToAgent>, dial: number) => void) {
    const dials: LinkEnd<RelayToAgent>[] = [];
    const link = new LinkClient({
      dial: (agent) => {
        dials.push(agent);
        answer(agent, dials.length);
        return { send: () => {}, close: () => {} };
      },
      hello: () => ({ type: "hello", protocolVersion: PROTOCOL_VERSION, agentVersion: "test", hardware: {} as Hello["hardware"] }),
      onMessage: () => {},
      onDisconnect: () => {},
      backoff: new Backoff({ minMs: 10, maxMs: 10 }),
      welcomeTimeoutMs: 50,
      reachedWelcomeTimeoutMs: 30_000,
      log: silentLogger(),
    });
    link.start();
    return { link, dials };
  }
  const welcome = (agent: LinkEnd<RelayToAgent>) => agent.send({ type: "welcome", machineId: "m", heartbeatIntervalMs: 60_000, protocolVersion: PROTOCOL_VERSION });

  it("leaves a relay that does not answer for the next one, waiting twice as long each time", async () => {
    const { link, dials } = client((agent, n) => {
      // The third relay answers three times the first wait late: only a wait that grew sees it.
      if (n === 3) setTimeout(() => welcome(agent), 150);
    });
    await link.whenOnline();
    expect(dials).toHaveLength(3);
    expect(link.lastError).toBeNull();
    await link.stop();
  });

  it("waits longer for a relay that took the link, as one busy with thousands of machines welcomes late", async () => {
    // Taken at once, welcomed four times the answer timeout later: the first link is the one that comes online.
    const { link, dials } = client((agent) => {
      agent.reached?.();
      setTimeout(() => welcome(agent), 200);
    });
    await link.whenOnline();
    expect(dials).toHaveLength(1);
    await link.stop();
  });
});

describe("credit gate", () => {
  it("lets a chunk through only against a credit", async () => {
    const gate = new CreditGate(1);
    const signal = new AbortController().signal;
    await gate.take(signal);
    let passed = false;
    const waiting = gate.take(signal).then(() => (passed = true));
    await Promise.resolve();
    expect(passed).toBe(false);
    gate.add(1);
    await waiting;
    expect(passed).toBe(true);
  });

  it("gives up when the request is aborted", async () => {
    const gate = new CreditGate(0);
    const c = new AbortController();
    const waiting = gate.take(c.signal);
    c.abort(new MakinaError("canceled", "client gone"));
    await expect(waiting).rejects.toMatchObject({ code: "canceled" });
  });
});

describe("slot pool", () => {
  it("hands slots out first come first served and to waiters on release", async () => {
    const pool = new SlotPool(["a"]);
    const first = await pool.acquire();
    const order: string[] = [];
    const w1 = pool.acquire().then((s) => order.push(`w1:${s}`));
    const w2 = pool.acquire().then((s) => order.push(`w2:${s}`));
    expect(pool.waiting).toBe(2);
    pool.release(first);
    await w1;
    pool.release("a");
    await w2;
    expect(order).toEqual(["w1:a", "w2:a"]);
  });

  it("drops a waiter whose request is aborted", async () => {
    const pool = new SlotPool<string>([]);
    const c = new AbortController();
    const waiting = pool.acquire(c.signal);
    c.abort();
    await expect(waiting).rejects.toMatchObject({ code: "canceled" });
    expect(pool.waiting).toBe(0);
  });
});
