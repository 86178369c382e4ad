import { describe, expect, it } from "vitest";
import { Backoff } from "../../agent/flow/backoff.js";
import { FailoverDialer, type ResolveHost } from "../../agent/link/failover-dialer.js";
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
  /** A failover whose dialers record what they dial and release. */
  function failover(servers: string[], resolve?: ResolveHost, random = () => 0.5) {
    const dialed: string[] = [];
    const released: string[] = [];
    const made: string[] = [];
    const dialer = new FailoverDialer({
      servers,
      resolve,
      random,
      dialer: (address, server) => {
        made.push(`${address} of ${server}`);
        return { dial: () => (dialed.push(address), { send: () => {}, close: () => {} }), close: () => {}, release: () => released.push(address) };
      },
    });
    const agent = { send: () => {}, close: () => {} };
    return { dialer, dialed, released, made, dial: (n: number) => Array.from({ length: n }, () => dialer.dial(agent)) };
  }

  it("sends each new link to the relay after the last one, starting at a random one", () => {
    const f = failover(["10.0.0.1:1", "10.0.0.2:1", "10.0.0.3:1"]);
    f.dial(4);
    expect(f.dialed).toEqual(["10.0.0.2:1", "10.0.0.3:1", "10.0.0.1:1", "10.0.0.2:1"]);
    expect(f.dialer.current).toBe("10.0.0.2:1");
    // Each dial closes the connections to the other relays: one opening to a relay left behind is not kept.
    expect(f.released.slice(-2).sort()).toEqual(["10.0.0.1:1", "10.0.0.3:1"]);
  });

  it("takes every address of a relay's name as a relay of its own, and checks TLS against the name", async () => {
    const resolve: ResolveHost = async (host) =>
      host === "relays.example"
        ? [{ address: "10.0.0.7", family: 4 }, { address: "fd00::7", family: 6 }, { address: "10.0.0.8", family: 4 }, { address: "10.0.0.7", family: 4 }]
        : [];
    const f = failover(["relays.example:7001", "10.0.0.9:7001"], resolve, () => 0);
    await f.dialer.refresh();
    // IPv4 preferred (a name with both families most often names one host twice), duplicates once.
    expect(f.dialer.rotation).toEqual(["10.0.0.7:7001", "10.0.0.8:7001", "10.0.0.9:7001"]);
    f.dial(4);
    expect(f.dialed).toEqual(["10.0.0.7:7001", "10.0.0.8:7001", "10.0.0.9:7001", "10.0.0.7:7001"]);
    expect(f.made).toEqual(["10.0.0.7:7001 of relays.example:7001", "10.0.0.8:7001 of relays.example:7001", "10.0.0.9:7001 of 10.0.0.9:7001"]);
  });

  it("starts at random among a name's addresses, so a fleet given one name spreads over its relays", async () => {
    const resolve: ResolveHost = async () => ["10.0.0.1", "10.0.0.2", "10.0.0.3"].map((address) => ({ address, family: 4 }));
    const firsts = await Promise.all(
      [0, 0.5, 0.99].map(async (r) => {
        const f = failover(["relays.example:7001"], resolve, () => r);
        await f.dialer.refresh();
        f.dial(1);
        return f.dialed[0];
      }),
    );
    expect(firsts).toEqual(["10.0.0.1:7001", "10.0.0.2:7001", "10.0.0.3:7001"]);
  });

  it("follows a name's addresses as they change, going on after the relay it linked to last", async () => {
    let addresses = ["10.0.0.1", "10.0.0.2"];
    const f = failover(["relays.example:7001"], async () => addresses.map((address) => ({ address, family: 4 })), () => 0);
    await f.dialer.refresh();
    f.dial(1);
    expect(f.dialed).toEqual(["10.0.0.1:7001"]);
    // Every dial resolves the names again for the next one: that lookup is done before the names change.
    await f.dialer.refresh();
    // A relay added in front of the one linked to: the next link still goes to the one after it.
    addresses = ["10.0.0.3", "10.0.0.1", "10.0.0.2"];
    await f.dialer.refresh();
    f.dial(1);
    expect(f.dialed.at(-1)).toBe("10.0.0.2:7001");
    await f.dialer.refresh();
    // The name no longer resolves: its last addresses are kept.
    addresses = [];
    await f.dialer.refresh();
    expect(f.dialer.rotation).toEqual(["10.0.0.3:7001", "10.0.0.1:7001", "10.0.0.2:7001"]);
    // The relay linked to last removed: the next link goes to the address at its place (wrapping round), its
    // connection is released and it is dialed no more.
    addresses = ["10.0.0.3", "10.0.0.1"];
    await f.dialer.refresh();
    f.dial(3);
    expect(f.dialed.slice(-3)).toEqual(["10.0.0.3:7001", "10.0.0.1:7001", "10.0.0.3:7001"]);
    expect(f.released).toContain("10.0.0.2:7001");
  });

  it("dials a name it cannot resolve as it is, for gRPC to resolve", async () => {
    const f = failover(["relays.example:7001"], async () => Promise.reject(new Error("ENOTFOUND")));
    await f.dialer.refresh();
    f.dial(1);
    expect(f.dialed).toEqual(["relays.example:7001"]);
  });

  it("waits at most the time it is given for a resolver that does not answer", async () => {
    const f = failover(["relays.example:7001"], () => new Promise(() => {}));
    await f.dialer.refresh(10);
    expect(f.dialer.rotation).toEqual(["relays.example:7001"]);
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
