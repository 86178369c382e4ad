import { describe, expect, it } from "vitest";
import { BusSeal, MAX_AGE_MS } from "../../relay/cluster/bus-seal.js";

/** The seal on messages between relays (relay/cluster/bus-seal.ts): what opens, and why the rest does not. */
describe("the seal on the relays' bus", () => {
  const secret = "the relays' shared secret";
  const subject = "makina.hop.rly_A";

  it("opens a message sealed by another relay of the deployment, saying which relay sealed it", () => {
    const [a, b] = [new BusSeal(secret, "rly_A"), new BusSeal(secret, "rly_B")];
    const body = { from: "rly_B", n: 1, input: { messages: [{ role: "user", content: "héllo" }] } };
    const sealed = b.seal(subject, body);
    expect(Buffer.from(sealed).toString("latin1")).not.toContain("llo");
    expect(a.open(subject, sealed)).toEqual({ sender: "rly_B", body });
  });

  it("drops a message not sealed with the relays' secret, or altered on the way", () => {
    const a = new BusSeal(secret, "rly_A");
    expect(a.open(subject, new TextEncoder().encode(JSON.stringify({ from: "rly_B", n: 1 })))).toBe("unauthenticated");
    expect(a.open(subject, new BusSeal("another secret", "rly_B").seal(subject, { n: 1 }))).toBe("unauthenticated");
    const sealed = Buffer.from(new BusSeal(secret, "rly_B").seal(subject, { n: 1 }));
    for (const at of [0, 5, 20, 30, sealed.length - 1]) {
      const altered = Buffer.from(sealed);
      altered[at]! ^= 1;
      expect(a.open(subject, altered)).toBe("unauthenticated");
    }
    expect(a.open(subject, sealed.subarray(0, 20))).toBe("unauthenticated");
    expect(a.open(subject, new Uint8Array())).toBe("unauthenticated");
  });

  it("drops a message sent on another subject than the one it was sealed for", () => {
    const sealed = new BusSeal(secret, "rly_B").seal(subject, { n: 1 });
    expect(new BusSeal(secret, "rly_C").open("makina.hop.rly_C", sealed)).toBe("misaddressed");
  });

  it("drops a message sealed more than 30 s before it is opened, or after", () => {
    let now = 1_000_000;
    const a = new BusSeal(secret, "rly_A", () => now);
    const b = new BusSeal(secret, "rly_B", () => now);
    const old = b.seal(subject, { n: 1 });
    now += MAX_AGE_MS + 1;
    expect(a.open(subject, old)).toBe("stale");
    const ahead = new BusSeal(secret, "rly_C", () => now + MAX_AGE_MS + 1).seal(subject, { n: 2 });
    expect(a.open(subject, ahead)).toBe("stale");
    expect(a.open(subject, b.seal(subject, { n: 3 }))).toMatchObject({ sender: "rly_B" });
  });

  it("drops a message that came already, and takes a sender's messages in any order within its window", () => {
    const a = new BusSeal(secret, "rly_A");
    const b = new BusSeal(secret, "rly_B");
    const messages = Array.from({ length: 10 }, (_, n) => b.seal(subject, { n }));
    // Some go to subjects this relay does not hear; the rest arrive out of order.
    for (const i of [1, 0, 5, 3, 9]) expect(a.open(subject, messages[i]!)).toEqual({ sender: "rly_B", body: { n: i } });
    for (const i of [1, 0, 5, 3, 9]) expect(a.open(subject, messages[i]!)).toBe("replayed");
    expect(a.open(subject, messages[7]!)).toEqual({ sender: "rly_B", body: { n: 7 } });
    // One older than the window of numbers remembered cannot be told from a replay: dropped.
    const first = b.seal(subject, { n: "first" });
    for (let i = 0; i < 5000; i++) b.seal(subject, { n: i });
    expect(a.open(subject, b.seal(subject, { n: "last" }))).toMatchObject({ body: { n: "last" } });
    expect(a.open(subject, first)).toBe("replayed");
  });

  /** Lets the event loop turn once: what the seal makes ahead is made. */
  const turn = () => new Promise((resolve) => setImmediate(resolve));

  it("keeps each relay's lanes apart: messages for two relays and for all, numbered alike, each open once, ready or not", async () => {
    const [a, c] = [new BusSeal(secret, "rly_A"), new BusSeal(secret, "rly_C")];
    const b = new BusSeal(secret, "rly_B");
    // B's first messages in three lanes carry the same numbers (1, 2, 3): each lane's own.
    const toA = [1, 2, 3].map((n) => b.seal("makina.hop.rly_A", { n }, "rly_A"));
    const toC = [1, 2, 3].map((n) => b.seal("makina.hop.rly_C", { n }, "rly_C"));
    const toAll = [1, 2, 3].map((n) => b.seal("makina.machines", { n }));
    // The nonces (the header's lane and number, its last 12 of 29 bytes) never repeat under B's key.
    expect(new Set([...toA, ...toC, ...toAll].map((m) => Buffer.from(m).subarray(17, 29).toString("hex"))).size).toBe(9);
    // Opened in order with the event loop turning between (the next decipher made ahead), or at once, or out of order.
    for (const [i, m] of toA.entries()) {
      expect(a.open("makina.hop.rly_A", m)).toEqual({ sender: "rly_B", body: { n: i + 1 } });
      await turn();
    }
    for (const i of [2, 0, 1]) expect(c.open("makina.hop.rly_C", toC[i]!)).toEqual({ sender: "rly_B", body: { n: i + 1 } });
    for (const m of toAll) expect(a.open("makina.machines", m)).toMatchObject({ sender: "rly_B" });
    // Each once: sent again, in any lane, dropped; one lane's message on another relay's subject too.
    await turn();
    for (const m of [...toA, ...toAll]) expect(a.open(m === toA[0] || m === toA[1] || m === toA[2] ? "makina.hop.rly_A" : "makina.machines", m)).toBe("replayed");
    expect(a.open("makina.hop.rly_A", toC[0]!)).toBe("misaddressed");
    // Made ahead, then the next message is sealed later, after the event loop turned many times: still opens.
    for (let i = 0; i < 3; i++) await turn();
    expect(a.open("makina.hop.rly_A", b.seal("makina.hop.rly_A", { n: 4 }, "rly_A"))).toEqual({ sender: "rly_B", body: { n: 4 } });
    // A forged message taking the place of the one made ahead for: dropped, and the real one still opens.
    await turn();
    const next = Buffer.from(b.seal("makina.hop.rly_A", { n: 5 }, "rly_A"));
    const forged = Buffer.from(next);
    forged[forged.length - 20]! ^= 1;
    expect(a.open("makina.hop.rly_A", forged)).toBe("unauthenticated");
    expect(a.open("makina.hop.rly_A", next)).toEqual({ sender: "rly_B", body: { n: 5 } });
  });

  it("keeps each relay's messages apart: the same numbers from two relays, or from one relay restarted, all open", () => {
    const a = new BusSeal(secret, "rly_A");
    const [b, c, bAgain] = [new BusSeal(secret, "rly_B"), new BusSeal(secret, "rly_C"), new BusSeal(secret, "rly_B")];
    for (const s of [b, c, bAgain]) expect(a.open(subject, s.seal(subject, { n: 1 }))).toMatchObject({ body: { n: 1 } });
  });
});
