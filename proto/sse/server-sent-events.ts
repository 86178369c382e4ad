/** One server-sent event: its name (`message` when the stream gave none) and its data (several `data:` lines joined by `\n`). */
export interface ServerSentEvent {
  event: string;
  data: string;
}

/**
 * The events of a `text/event-stream`, from its text as it arrives (any chunking, `\n` or `\r\n` lines), as the
 * HTML standard reads them: `event:` and `data:` fields (one space after the colon dropped), comments (`:`) and
 * other fields skipped, an event dispatched at each blank line that follows data. Used by the agent (an
 * OpenAI-compatible server's stream), the CLI (the relay's admin events) and the web application (the gateway's
 * stream): this module imports nothing, so each of them can.
 */
export async function* serverSentEvents(text: AsyncIterable<string>): AsyncGenerator<ServerSentEvent> {
  let buffer = "";
  let event = "";
  let data: string | undefined;
  for await (const chunk of text) {
    buffer += chunk;
    let start = 0;
    for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n", start)) {
      const line = buffer.charCodeAt(end - 1) === 13 && end > start ? buffer.slice(start, end - 1) : buffer.slice(start, end);
      start = end + 1;
      if (line === "") {
        if (data !== undefined) yield { event: event || "message", data };
        event = "";
        data = undefined;
        continue;
      }
      if (line.charCodeAt(0) === 58) continue; // ":" a comment
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(line.charCodeAt(colon + 1) === 32 ? colon + 2 : colon + 1);
      if (field === "data") data = data === undefined ? value : `${data}\n${value}`;
      else if (field === "event") event = value;
    }
    buffer = buffer.slice(start);
  }
}

/** A response body's text, chunk by chunk (UTF-8 split across chunks decoded whole); leaving the loop early cancels the body. */
export async function* bodyText(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      yield decoder.decode(value, { stream: true });
    }
    const rest = decoder.decode();
    if (rest) yield rest;
  } finally {
    await reader.cancel().catch(() => {});
  }
}
