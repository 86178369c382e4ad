import { describe, expect, it } from "vitest";
import { bodyText, serverSentEvents, type ServerSentEvent } from "../../proto/sse/index.js";

async function parse(chunks: string[]): Promise<ServerSentEvent[]> {
  async function* text() {
    yield* chunks;
  }
  const out: ServerSentEvent[] = [];
  for await (const e of serverSentEvents(text())) out.push(e);
  return out;
}

describe("reading server-sent events", () => {
  const stream = ': makina events\nretry: 2000\n\nevent: stack\ndata: {"stack_id":"stk_1"}\n\ndata: {"a":1}\n\ndata: [DONE]\n\n';

  it("reads named events, unnamed ones as `message`, and skips comments and other fields", async () => {
    expect(await parse([stream])).toEqual([
      { event: "stack", data: '{"stack_id":"stk_1"}' },
      { event: "message", data: '{"a":1}' },
      { event: "message", data: "[DONE]" },
    ]);
  });

  it("reads the same events however the text is cut, with \\r\\n or \\r lines too, and a byte-order mark first", async () => {
    const whole = await parse([stream]);
    expect(await parse(stream.split(""))).toEqual(whole);
    for (const eol of ["\r\n", "\r"]) {
      const other = stream.replaceAll("\n", eol);
      expect(await parse([other])).toEqual(whole);
      expect(await parse(other.split(""))).toEqual(whole);
    }
    expect(await parse(["\uFEFF" + stream])).toEqual(whole);
  });

  it("joins several data lines with a newline, keeps spaces after the first, and leaves an event without a blank line after it unread", async () => {
    expect(await parse(["data:one\ndata:  two\ndata\n\n", "data: unfinished\n"])).toEqual([{ event: "message", data: "one\n two\n" }]);
  });

  it("decodes a body whose UTF-8 characters are split between chunks", async () => {
    const bytes = new TextEncoder().encode("data: héllo 🌍\n\n");
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const b of bytes) controller.enqueue(new Uint8Array([b]));
        controller.close();
      },
    });
    const events: ServerSentEvent[] = [];
    for await (const e of serverSentEvents(bodyText(body))) events.push(e);
    expect(events).toEqual([{ event: "message", data: "héllo 🌍" }]);
  });
});
