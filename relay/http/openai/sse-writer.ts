import type { Response } from "express";

/**
 * Writes server-sent events with backpressure: each write waits until the
 * socket has taken the previous one, so a slow client never makes the relay
 * buffer more than one event. Resolves `false` once the client has gone.
 */
export class SseWriter {
  constructor(private readonly res: Response) {}

  /** Sends the event-stream headers at once (nothing is buffered by proxies). */
  open(): void {
    this.res.status(200);
    this.res.setHeader("Content-Type", "text/event-stream; charset=utf-8");
    this.res.setHeader("Cache-Control", "no-cache");
    this.res.setHeader("X-Accel-Buffering", "no");
    this.res.setHeader("Connection", "keep-alive");
    this.res.flushHeaders();
  }

  /** Writes `data: <payload>\n\n`, waiting for drain when the socket is full. */
  async send(payload: unknown): Promise<boolean> {
    return this.raw(`data: ${typeof payload === "string" ? payload : JSON.stringify(payload)}\n\n`);
  }

  private raw(text: string): Promise<boolean> {
    const res = this.res;
    if (res.destroyed || res.writableEnded) return Promise.resolve(false);
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
