import { describe, expect, it } from "vitest";
import { createLogger, WarningThrottle } from "../../proto/index.js";

describe("warnings a peer can cause as often as it likes", () => {
  it("are written once per cause and interval, the next one saying how many were left unwritten, with the bindings of who caused it", () => {
    const lines: Record<string, unknown>[] = [];
    const log = createLogger({ level: "warn", write: (line) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    let now = 0;
    const throttle = new WarningThrottle(60_000, () => now);
    for (let i = 0; i < 100; i++) throttle.warn("flood", log.child({ machineId: `m${i}` }), "report dropped", { n: i });
    throttle.warn("other", log, "something else");
    expect(lines.map((l) => [l.msg, l.machineId, l.n, l.unwrittenSinceLast])).toEqual([
      ["report dropped", "m0", 0, undefined],
      ["something else", undefined, undefined, undefined],
    ]);
    now = 59_999;
    throttle.warn("flood", log, "report dropped", { n: 100 });
    expect(lines).toHaveLength(2);
    now = 60_000;
    throttle.warn("flood", log, "report dropped", { n: 101 });
    expect(lines[2]).toMatchObject({ msg: "report dropped", n: 101, unwrittenSinceLast: 100 });
  });
});
