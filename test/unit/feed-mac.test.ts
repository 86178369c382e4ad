import { describe, expect, it } from "vitest";
import { FeedMac } from "../../relay/cluster/feed-mac.js";

describe("the change feed's tags", () => {
  it("hold for what was tagged, under the relays' secret only, and for nothing else", () => {
    const mac = new FeedMac("the relays' secret");
    const tag = mac.tag("ack", "rly_b", "rly_a", "7");
    expect(tag).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(mac.holds(tag, "ack", "rly_b", "rly_a", "7")).toBe(true);
    // Another barrier, writer, sender or kind; another secret; a tag cut short, or none.
    expect(mac.holds(tag, "ack", "rly_b", "rly_a", "8")).toBe(false);
    expect(mac.holds(tag, "ack", "rly_b", "rly_c", "7")).toBe(false);
    expect(mac.holds(tag, "ack", "rly_ghost", "rly_a", "7")).toBe(false);
    expect(mac.holds(tag, "barrier", "rly_b", "rly_a", "7")).toBe(false);
    expect(new FeedMac("another secret").holds(tag, "ack", "rly_b", "rly_a", "7")).toBe(false);
    expect(mac.holds(tag.slice(0, 10), "ack", "rly_b", "rly_a", "7")).toBe(false);
    expect(mac.holds(undefined, "ack", "rly_b", "rly_a", "7")).toBe(false);
    // Parts are kept apart: "a" + "bc" is not "ab" + "c".
    expect(mac.holds(mac.tag("ping", "ab", "c"), "ping", "a", "bc")).toBe(false);
  });
});
