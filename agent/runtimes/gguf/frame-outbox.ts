import type { CreditGate } from "../../flow/index.js";
import type { TokenEvent } from "../../../proto/index.js";
import { frameCost, type ProcessFrame } from "./gguf-wire.js";
import { mergePieces } from "./merge-pieces.js";

/** What a frame carries: a piece of the answer (the end goes by `finish`, an error by `fail`). */
type Piece = Exclude<TokenEvent, { type: "end" }>;

/** Options of {@link FrameOutbox}. */
export interface FrameOutboxOptions {
  /** Writes frames already serialised (one line each) to the agent, in one write. */
  write: (lines: string) => void;
  /** The agent's credit, in bytes of frames. */
  gate: CreditGate;
  /** The connection's: aborted when it closes, a frame waiting for credit is given up (a cancel opens the gate instead). */
  signal: AbortSignal;
  /** After the first frame, at most one frame per this many ms (asked each time a frame is held: it may change with the load). */
  frameMs: () => number;
}

/**
 * What a GGUF model process sends of one request: the first token at once, then what was decoded meanwhile as
 * one write (consecutive text merged into one frame) at each tick of a clock of `frameMs` that every request of
 * the process shares (so about one frame per interval; the first tick after the first token may come sooner),
 * each against the agent's credit. A token that comes `frameMs` or more after the last frame leaves at once.
 * `add` resolves when the decoder may go on: at once while a frame waits only for its tick, and only once it
 * was sent when the agent's credit is spent, so a reader that stops reading stops the decoding within the
 * window, whatever the interval.
 */
export class FrameOutbox {
  private held: Piece[] = [];
  /** What the held events will cost of the credit. */
  private heldCost = 0;
  private lastSentAt = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | undefined;
  private sending: Promise<void> | undefined;

  constructor(private readonly o: FrameOutboxOptions) {}

  /**
   * Holds an event for the next frame, sending it now when a frame is due, or when what is held reaches the
   * credit left (so that the decoder, waiting for the send, never runs past the window).
   */
  add(event: Piece): Promise<void> | undefined {
    this.held.push(event);
    this.heldCost += frameCost(event);
    if (this.sending) return this.sending;
    const now = performance.now();
    const frameMs = this.o.frameMs();
    if (now - this.lastSentAt >= frameMs || this.heldCost >= this.o.gate.left) return this.send();
    // Sent at the next tick of a clock every request of the process shares, so that the frames of requests
    // decoded together leave together (their reader wakes once for all), even if no token follows. A tick less
    // than half an interval after the last frame is skipped: a frame that just left (a timer fires up to a ms
    // early, a frame may go at once) is not followed by another of a token or two.
    if (!this.timer) {
      let wait = frameMs - (now % frameMs);
      if (now + wait - this.lastSentAt < frameMs / 2) wait += frameMs;
      this.timer = setTimeout(() => void this.send().catch(() => undefined), wait);
    }
    return undefined;
  }

  /** Sends what is held (against credit), then `end` in the same write when nothing waited. */
  async finish(end: ProcessFrame): Promise<void> {
    this.close();
    if (this.sending) await this.sending;
    await this.sendHeld(end);
  }

  /** Sends what is held and then `last` (an error, or the stopped request's usage), at once: the text before it is not lost. */
  fail(last: ProcessFrame): void {
    this.close();
    this.o.write(this.lines(this.take()) + `${JSON.stringify(last)}\n`);
  }

  /** Stops the timer of a request that ended otherwise (canceled). */
  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private send(): Promise<void> {
    this.close();
    this.sending ??= this.sendHeld().finally(() => (this.sending = undefined));
    return this.sending;
  }

  private async sendHeld(end?: ProcessFrame): Promise<void> {
    if (this.held.length) await this.o.gate.available(this.o.signal);
    let lines = this.lines(this.take());
    if (end) lines += `${JSON.stringify(end)}\n`;
    this.lastSentAt = performance.now();
    if (lines) this.o.write(lines);
  }

  /** The held events, no longer held. */
  private take(): Piece[] {
    this.heldCost = 0;
    return this.held.splice(0);
  }

  /** The frames of `events` (merged), their cost spent of the credit. */
  private lines(events: Piece[]): string {
    let lines = "";
    for (const ev of mergePieces(events) as Piece[]) {
      this.o.gate.spend(frameCost(ev));
      lines += `${JSON.stringify(ev)}\n`;
    }
    return lines;
  }
}
