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

  it("keeps each relay's messages apart: the same numbers from two relays, or from one relay restarted, all open", () => {
    const a = new BusSeal(secret, "rly_A");
    const [b, c, bAgain] = [new BusSeal(secret, "rly_B"), new BusSeal(secret, "rly_C"), new BusSeal(secret, "rly_B")];
    for (const s of [b, c, bAgain]) expect(a.open(subject, s.seal(subject, { n: 1 }))).toMatchObject({ body: { n: 1 } });
  });
});
