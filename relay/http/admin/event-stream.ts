import type { Response } from "express";
import { MakinaError } from "../../../proto/index.js";
import type { AdminEvent } from "../../admin-contract/index.js";
import type { EventBus, RelayEvent } from "../../events/index.js";
import { toWire } from "./to-wire.js";

/** A bus event as the contract's stream announces it: its type is the event's name, what it names its data. */
function announced(event: RelayEvent): AdminEvent {
  switch (event.type) {
    case "machine":
      return { event: "machine", data: toWire({ type: "machine" as const, machineId: event.machineId }) };
    case "stack":
      return { event: "stack", data: toWire({ type: "stack" as const, stackId: event.stackId }) };
    case "key":
      return { event: "key", data: toWire({ type: "key" as const, keyId: event.keyId }) };
  }
}

/** Options of {@link EventStreams}. */
export interface EventStreamsOptions {
  /** How often an idle stream sends a comment (so proxies and browsers keep it open) and asks `stillAllowed`. @default 15000 */
  keepaliveMs?: number;
  /** Streams one holder (a session, the operator) may have open at once. @default 8 */
  perHolder?: number;
}

/** One open stream: who holds it, and how to end it. */
interface OpenStream {
  holder: string;
  end: () => void;
}

/**
 * The admin API's live event streams (`GET /admin/v1/events`): the bus's events that pass a filter, as
 * server-sent events (`event: machine|stack|key`, `data: {"machine_id": …}`), until the client goes away.
 * The browser's EventSource reconnects by itself; a page then reloads what it shows. Bounded:
 * - at most 8 streams per session (one per open tab); the next gets 429 `too_many_streams`;
 * - a client that does not read is not buffered for: when a write is held back, the events that follow are not
 *   written, and once it drains the stream ends (the page reconnects and reloads, missing nothing);
 * - the stream ends at once when its session is signed out on this relay, and at the next keepalive when its
 *   holder no longer may read it (signed out elsewhere, expired, the user removed, the admin token changed).
 */
export class EventStreams {
  private readonly open = new Set<OpenStream>();
  private readonly keepaliveMs: number;
  private readonly perHolder: number;

  constructor(
    private readonly bus: EventBus,
    options: EventStreamsOptions = {},
  ) {
    this.keepaliveMs = options.keepaliveMs ?? 15_000;
    this.perHolder = options.perHolder ?? 8;
  }

  /**
   * Starts streaming to `res`. `holder`: who holds it (a session's hash, or the operator); `stillAllowed`: asked
   * at each keepalive. Throws 429 `too_many_streams` (before anything is written) when the holder has too many.
   */
  stream(res: Response, filter: (event: RelayEvent) => boolean, holder: string, stillAllowed: () => Promise<boolean>): void {
    let held = 0;
    for (const s of this.open) if (s.holder === holder) held++;
    if (held >= this.perHolder) {
      throw new MakinaError("too_many_streams", `At most ${this.perHolder} live event streams per session are open at once; close a tab of the web application.`, { retryAfterMs: this.keepaliveMs });
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store", connection: "keep-alive", "x-accel-buffering": "no" });
    let congested = false;
    let missed = false;
    const write = (text: string) => {
      if (congested) {
        missed = true;
        return;
      }
      if (!res.write(text)) congested = true;
    };
    res.on("drain", () => {
      congested = false;
      // Events were dropped while the client did not read: it reconnects and reloads everything.
      if (missed) res.end();
    });
    write(": makina events\nretry: 2000\n\n");
    const unsubscribe = this.bus.subscribe(
      (event) => {
        if (!filter(event)) return;
        const { event: name, data } = announced(event);
        write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
      },
      () => res.end(),
    );
    const keepalive = setInterval(() => {
      write(": keepalive\n\n");
      stillAllowed().then(
        (allowed) => allowed || res.end(),
        () => undefined,
      );
    }, this.keepaliveMs);
    const entry: OpenStream = { holder, end: () => res.end() };
    this.open.add(entry);
    res.on("close", () => {
      clearInterval(keepalive);
      unsubscribe();
      this.open.delete(entry);
    });
  }

  /** Ends every stream a holder has open (its session was signed out). */
  endFor(holder: string): void {
    for (const s of this.open) if (s.holder === holder) s.end();
  }

  /** Streams open now. */
  get size(): number {
    return this.open.size;
  }
}
