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
  /** Streams one session may have open at once. @default 8 */
  perSession?: number;
  /** Streams one user (or the operator) may have open at once, over all its sessions. @default 32 */
  perUser?: number;
  /** Streams open at once on this relay. @default 10000 */
  total?: number;
}

/** One open stream: whose it is, and how to end it. */
interface OpenStream {
  session: string;
  user: string;
  stop: (how: "end" | "destroy") => void;
}

/** How long a stream ended politely may take to close before its connection is cut. */
const END_GRACE_MS = 5_000;

/**
 * The admin API's live event streams (`GET /admin/v1/events`): the bus's events that pass a filter, as
 * server-sent events (`event: machine|stack|key`, `data: {"machine_id": …}`), until the client goes away.
 * The browser's EventSource reconnects by itself; a page then reloads what it shows. Bounded:
 * - at most 8 streams per session (one per open tab), 32 per user and 10,000 on the relay; the next gets 429
 *   `too_many_streams`;
 * - a client that does not read is not buffered for: when a write is held back, the events that follow are not
 *   written, and once it drains the stream ends (the page reconnects and reloads, missing nothing);
 * - the stream ends at once when its session is signed out on this relay, and at the next keepalive when its
 *   holder no longer may read it (signed out elsewhere, expired, the user removed, the admin token changed).
 *   A stream that ends stops counting at once; a connection that has not closed 5 s later is cut.
 */
export class EventStreams {
  private readonly open = new Set<OpenStream>();
  private readonly o: Required<EventStreamsOptions>;

  constructor(
    private readonly bus: EventBus,
    options: EventStreamsOptions = {},
  ) {
    this.o = { keepaliveMs: 15_000, perSession: 8, perUser: 32, total: 10_000, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) };
  }

  /**
   * Starts streaming to `res`. `session`: the session's hash (or the operator's token's); `user`: whose it is;
   * `stillAllowed`: asked at each keepalive. Throws 429 `too_many_streams` (before anything is written) when
   * the session, the user or the relay has too many open.
   */
  stream(res: Response, filter: (event: RelayEvent) => boolean, who: { session: string; user: string }, stillAllowed: () => Promise<boolean>): void {
    let bySession = 0;
    let byUser = 0;
    for (const s of this.open) {
      if (s.session === who.session) bySession++;
      if (s.user === who.user) byUser++;
    }
    if (bySession >= this.o.perSession || byUser >= this.o.perUser || this.open.size >= this.o.total) {
      const limit = bySession >= this.o.perSession ? `${this.o.perSession} per session` : byUser >= this.o.perUser ? `${this.o.perUser} per user` : `${this.o.total} on this relay`;
      throw new MakinaError("too_many_streams", `Too many live event streams are open (at most ${limit}); close a tab of the web application.`, { retryAfterMs: this.o.keepaliveMs });
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store", connection: "keep-alive", "x-accel-buffering": "no" });
    // A write the socket refuses after the end is not the relay's problem: never an unhandled error.
    res.on("error", () => undefined);
    let congested = false;
    let missed = false;
    let stopped = false;
    let grace: NodeJS.Timeout | undefined;
    const write = (text: string) => {
      if (stopped || res.writableEnded || res.destroyed) return;
      if (congested) {
        missed = true;
        return;
      }
      if (!res.write(text)) congested = true;
    };
    const entry: OpenStream = {
      session: who.session,
      user: who.user,
      // Idempotent: nothing is written after it, and the stream stops counting at once.
      stop: (how) => {
        if (!stopped) {
          stopped = true;
          clearInterval(keepalive);
          unsubscribe();
          this.open.delete(entry);
        }
        if (how === "destroy" || congested) return void res.destroy();
        if (!res.writableEnded) res.end();
        grace ??= setTimeout(() => res.destroy(), END_GRACE_MS);
        grace.unref();
      },
    };
    res.on("drain", () => {
      congested = false;
      // Events were dropped while the client did not read: it reconnects and reloads everything.
      if (missed) entry.stop("end");
    });
    const unsubscribe = this.bus.subscribe(
      (event) => {
        if (!filter(event)) return;
        const { event: name, data } = announced(event);
        write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
      },
      () => entry.stop("end"),
    );
    const keepalive = setInterval(() => {
      write(": keepalive\n\n");
      stillAllowed().then(
        (allowed) => allowed || entry.stop("end"),
        () => undefined,
      );
    }, this.o.keepaliveMs);
    this.open.add(entry);
    write(": makina events\nretry: 2000\n\n");
    res.on("close", () => {
      clearTimeout(grace);
      entry.stop("destroy");
    });
  }

  /** Ends every stream of a user (disabled, re-roled, given a new password or deleted). */
  endForUser(user: string): void {
    for (const s of this.open) if (s.user === user) s.stop("end");
  }

  /** Ends every stream of a session (it was signed out). */
  endFor(session: string): void {
    for (const s of this.open) if (s.session === session) s.stop("end");
  }

  /** Streams open now. */
  get size(): number {
    return this.open.size;
  }
}
