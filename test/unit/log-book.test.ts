import { describe, expect, it } from "vitest";
import { bookedLogger, createLogger, LogBook } from "../../proto/index.js";

// What an agent keeps of its log for an admin to read over the link: the lines it writes, redacted as its log is,
// under the machine and the stack they are about, bounded.
describe("the machine's log as an admin reads it", () => {
  it("keeps each line the agent logs, redacted, under the machine and under the stack it names; reads after a line", () => {
    const written: string[] = [];
    const book = new LogBook(() => 1_700_000_000_000);
    const log = bookedLogger(createLogger({ write: (l) => written.push(l), level: "debug" }), book, { component: "agent" });
    log.info("linked to the relay", { token: "mk_mach_secretsecret" });
    log.debug("a detail nobody reads here");
    const stacks = log.child({ component: "stacks", stackId: "stk_1" });
    stacks.warn("download slow", { url: "https://models.example/m.gguf?X-Amz-Signature=abc" });
    book.add("stk_1", "output", "gguf-server: loaded m.gguf");

    const machine = book.read("", 0, 100);
    expect(machine.logLines.map((l) => [l.seq, l.level, l.text])).toEqual([
      [1, "info", "agent: linked to the relay  token=[redacted]"],
      [2, "warn", "stacks: download slow  stackId=stk_1 url=https://models.example/m.gguf?[redacted]"],
      [3, "output", "gguf-server: loaded m.gguf"],
    ]);
    expect(machine.logLines[0]!.timeMs).toBe(1_700_000_000_000);
    expect(book.read("stk_1", 0, 100).logLines.map((l) => l.seq)).toEqual([2, 3]);
    expect(book.read("stk_1", 2, 100).logLines.map((l) => l.seq)).toEqual([3]);
    expect(book.read("stk_1", 0, 1).logLines.map((l) => l.seq)).toEqual([2]);
    expect(book.read("stk_other", 0, 100)).toEqual({ logLines: [], logTruncated: false });
    // The agent's own log still has every line, debug too.
    expect(written).toHaveLength(3);
    expect(written.join("\n")).not.toContain("secretsecret");
  });

  it("keeps the last 500 lines of each, says when older ones were dropped, and cuts a line too long", () => {
    const book = new LogBook();
    for (let i = 0; i < 600; i++) book.add(i % 2 ? "stk_1" : "", "info", `line ${i}`);
    const machine = book.read("", 0, 1000);
    expect([machine.logLines.length, machine.logTruncated, machine.logLines[0]!.text]).toEqual([500, true, "line 100"]);
    // A reader that has read up to the last dropped line missed nothing.
    expect(book.read("", 100, 10).logTruncated).toBe(false);
    const stack = book.read("stk_1", 0, 1000);
    expect([stack.logLines.length, stack.logTruncated]).toEqual([300, false]);
    book.add("", "info", "x".repeat(5000));
    expect(book.read("", 600, 10).logLines[0]!.text).toHaveLength(2000);
  });
});
