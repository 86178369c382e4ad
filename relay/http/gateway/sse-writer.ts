import type { ServerResponse } from "node:http";

/**
 * Writes server-sent events with backpressure: each write waits until the
 * socket has taken the previous one, so a slow client never makes the relay
 * buffer more than one event. Resolves `false` once the client has gone.
 * Events written in the same turn of the event loop leave in one socket write
 * (the response is corked until the turn ends), never later.
 */
export class SseWriter {
  private corked = false;

  constructor(private readonly res: ServerResponse) {}

  /** Sets the event-stream headers; they leave with the first event, which the caller sends at once. */
  open(): void {
    this.res.statusCode = 200;
    this.res.setHeader("Content-Type", "text/event-stream; charset=utf-8");
    this.res.setHeader("Cache-Control", "no-cache");
    this.res.setHeader("X-Accel-Buffering", "no");
    this.res.setHeader("Connection", "keep-alive");
  }

  /** Writes `data: <payload>\n\n` (the payload already serialised), waiting for drain when the socket is full. */
  send(payload: string): Promise<boolean> {
    return this.write(`data: ${payload}\n\n`);
  }

  /** Writes frames already formatted as server-sent events (`event: …\ndata: …\n\n`), waiting for drain when the socket is full. */
  write(text: string): Promise<boolean> {
    const res = this.res;
    if (res.destroyed || res.writableEnded) return Promise.resolve(false);
    if (!this.corked) {
      this.corked = true;
      res.cork();
      process.nextTick(() => {
        this.corked = false;
        res.uncork();
      });
    }
    if (res.write(text)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (ok: boolean) => () => {
        res.off("drain", onDrain);
        res.off("close", onClose);
        resolve(ok);
      };
      const onDrain = done(true);
      const onClose = done(false);
      res.once("drain", onDrain);
      res.once("close", onClose);
    });
  }

  end(): void {
    if (!this.res.writableEnded) this.res.end();
  }
}
