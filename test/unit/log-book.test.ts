import { describe, expect, it } from "vitest";
import { bookedLogger, createLogger, LogBook, redactOutputLine } from "../../proto/index.js";

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
    const first = machine.logLines[0]!.seq;
    expect(machine.logLines.map((l) => [l.seq - first, l.level, l.text])).toEqual([
      [0, "info", "agent: linked to the relay  token=[redacted]"],
      [1, "warn", "stacks: download slow  stackId=stk_1 url=https://models.example/m.gguf?[redacted]"],
      [2, "output", "gguf-server: loaded m.gguf"],
    ]);
    expect(machine.logLines[0]!.timeMs).toBe(1_700_000_000_000);
    expect(book.read("stk_1", 0, 100).logLines.map((l) => l.seq - first)).toEqual([1, 2]);
    expect(book.read("stk_1", first + 1, 100).logLines.map((l) => l.seq - first)).toEqual([2]);
    expect(book.read("stk_1", 0, 1).logLines.map((l) => l.seq - first)).toEqual([1]);
    // A stack removed: its lines go (the machine's own keep theirs).
    book.forget("stk_1");
    expect(book.read("stk_1", 0, 100).logLines).toEqual([]);
    expect(book.read("", 0, 100).logLines).toHaveLength(3);
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
    expect(book.read("", machine.logLines[0]!.seq - 1, 10).logTruncated).toBe(false);
    const stack = book.read("stk_1", 0, 1000);
    expect([stack.logLines.length, stack.logTruncated]).toEqual([300, false]);
    book.add("", "info", "x".repeat(5000));
    expect(book.read("", machine.logLines.at(-1)!.seq, 10).logLines[0]!.text).toHaveLength(1000);
  });

  it("numbers a restarted agent's lines above the last agent's, so a page that read those gets the new ones", () => {
    const before = new LogBook(() => 1_700_000_000_000);
    before.add("", "info", "stopping");
    const last = before.read("", 0, 10).logLines.at(-1)!.seq;
    const after = new LogBook(() => 1_700_000_005_000);
    after.add("", "info", "started again");
    expect(after.read("", last, 10).logLines.map((l) => l.text)).toEqual(["started again"]);
  });

  it("redacts a runtime's output by shape and by a credential's name", () => {
    expect(redactOutputLine("GET /v1/models Authorization: Bearer sk-abc123def")).toBe("GET /v1/models Authorization: Bearer [redacted]");
    expect(redactOutputLine("connecting with api_key=abcdef, token: 'xyz' and password=hunter2")).toBe("connecting with api_key=[redacted], token: '[redacted]' and password=[redacted]");
    expect(redactOutputLine("downloading https://hub.example/m.gguf?sig=123 with hf_abcdefghijklmnopqrstuvwxyz0123456")).toBe("downloading https://hub.example/m.gguf?[redacted] with hf_[redacted]");
    // Words that only look alike stay.
    expect(redactOutputLine("max_tokens=512 tokens: 12 prompt tokens")).toBe("max_tokens=512 tokens: 12 prompt tokens");
  });
});
