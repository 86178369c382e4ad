/** One server-sent event: its name (`message` when the stream gave none) and its data (several `data:` lines joined by `\n`). */
export interface ServerSentEvent {
  event: string;
  data: string;
}

/**
 * Reads a `text/event-stream` as the HTML standard does, from its text as it arrives (any chunking; `\n`,
 * `\r\n` or `\r` lines): `event:` and `data:` fields (one space after the colon dropped), comments (`:`) and
 * other fields skipped, an event dispatched at each blank line that follows data. One parser for the agent (an
 * OpenAI-compatible server's stream), the CLI (the relay's admin events) and the web application (the
 * gateway's stream): this module imports nothing, so each of them can.
 */
export class ServerSentEventParser {
  private buffer = "";
  private event = "";
  private data: string | undefined;
  /** The last chunk ended with `\r`: a `\n` starting the next one ends no second line. */
  private afterCr = false;
  private started = false;

  /** Reads a chunk of the stream's text; returns the events it completed, in order. */
  push(chunk: string): ServerSentEvent[] {
    const events: ServerSentEvent[] = [];
    let text = this.buffer + chunk;
    if (!this.started && text !== "") {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (this.afterCr && text.charCodeAt(0) === 10) text = text.slice(1);
    this.afterCr = false;
    let start = 0;
    // Where the next line feed and carriage return are, looked for again only once passed (no rescanning).
    let lf = text.indexOf("\n");
    let cr = text.indexOf("\r");
    for (;;) {
      if (lf >= 0 && lf < start) lf = text.indexOf("\n", start);
      if (cr >= 0 && cr < start) cr = text.indexOf("\r", start);
      const end = cr < 0 ? lf : lf < 0 ? cr : Math.min(cr, lf);
      if (end < 0) break;
      // A `\r` at the very end may be the first half of `\r\n`.
      if (end === cr && end === text.length - 1) this.afterCr = true;
      this.line(text.slice(start, end), events);
      start = end + (end === cr && text.charCodeAt(end + 1) === 10 ? 2 : 1);
    }
    this.buffer = text.slice(start);
    return events;
  }

  private line(line: string, events: ServerSentEvent[]): void {
    if (line === "") {
      if (this.data !== undefined) events.push({ event: this.event || "message", data: this.data });
      this.event = "";
      this.data = undefined;
      return;
    }
    if (line.charCodeAt(0) === 58) return; // ":" a comment
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(line.charCodeAt(colon + 1) === 32 ? colon + 2 : colon + 1);
    if (field === "data") this.data = this.data === undefined ? value : `${this.data}\n${value}`;
    else if (field === "event") this.event = value;
  }
}

/** The events of a stream's text, as {@link ServerSentEventParser} reads them. */
export async function* serverSentEvents(text: AsyncIterable<string>): AsyncGenerator<ServerSentEvent> {
  const parser = new ServerSentEventParser();
  for await (const chunk of text) yield* parser.push(chunk);
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
