import { describe, expect, it } from "vitest";
import { MAX_KEY_SERIES, RelayMetrics } from "../../relay/metrics/relay-metrics.js";

describe("the relay's metrics", () => {
  it("give the first 100 keys a series each and count every other key's requests under key_id=\"other\"", async () => {
    const metrics = new RelayMetrics({ machinesOnline: () => 0 });
    const answered = (keyId: string) => metrics.started()({ model: "m", status: 200, keyId, errorCode: null, durationSeconds: 0.01, firstTokenSeconds: null });
    // A member minting keys: 1,000 of them, each sending two requests; a request with no key, and the first key again.
    for (let i = 0; i < 1000; i++) for (const _ of [1, 2]) answered(`key_${String(i).padStart(4, "0")}`);
    answered("");
    answered("key_0000");
    const lines = (await metrics.render()).split("\n").filter((l) => l.startsWith("makina_requests_total{"));
    const keyIds = lines.map((l) => /key_id="([^"]*)"/.exec(l)![1]!);
    expect(MAX_KEY_SERIES).toBe(100);
    expect(lines).toHaveLength(MAX_KEY_SERIES + 2);
    expect(keyIds.filter((k) => k.startsWith("key_"))).toHaveLength(MAX_KEY_SERIES);
    const value = (keyId: string) => Number(lines.find((l) => l.includes(`key_id="${keyId}"`))!.split(" ").pop());
    expect([value("key_0000"), value("key_0099"), value("other"), value("")]).toEqual([3, 2, 1800, 1]);
  });
});
