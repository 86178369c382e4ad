import { budgetRefused, lineName, periodOf, type BudgetAsk, type BudgetLine, type BudgetSeed } from "./token-budget.js";

/** A line's count in its current period: tokens used and reserved by requests in flight. */
interface Count {
  used: number;
}

/** What a reservation took: the tokens granted, and from which counts (its lines in their periods then). */
export interface Reservation {
  granted: number;
  /** What the counts hold of it now: what was granted, then what it used once settled, 0 once refunded. */
  charged: number;
  /** What is left of the tightest line after it. */
  remaining: number;
  counts: Count[];
}

/**
 * Token budgets counted in this relay's memory: per line and calendar period, the tokens used (settled) and
 * reserved (requests in flight). A line's count is read from the usage counts the first time it is needed in a
 * period (`seed`), then kept here; a period that ends starts a new count. Checking and reserving is one
 * synchronous step once the counts are held, so concurrent requests never overspend.
 */
export class BudgetBook {
  private readonly counts = new Map<string, Count>();
  private readonly seeding = new Map<string, Promise<void>>();

  constructor(
    private readonly seed: BudgetSeed,
    private readonly now: () => number = Date.now,
  ) {}

  /** Undefined when every line's count is held for its current period; else a promise that reads those missing. */
  prepare(lines: readonly BudgetLine[]): Promise<void> | undefined {
    let waits: Promise<void>[] | undefined;
    const now = this.now();
    for (const line of lines) {
      const { start } = periodOf(line.period, now);
      const name = lineName(line, start);
      if (this.counts.has(name)) continue;
      let pending = this.seeding.get(name);
      if (!pending) {
        pending = this.seed(line, start).then(
          (used) => {
            if (!this.counts.has(name)) this.counts.set(name, { used });
          },
          // The usage counts unreadable (the database refusing): nothing is kept, so a period is never counted from
          // zero for good; the request goes on uncounted, and the next one reads them again.
          () => undefined,
        );
        pending.finally(() => this.seeding.delete(name)).catch(() => undefined);
        this.seeding.set(name, pending);
        this.forgetEnded(now);
      }
      (waits ??= []).push(pending);
    }
    return waits && Promise.all(waits).then(() => undefined);
  }

  /** Reserves up to `ask.want` tokens on every line (no fewer than `ask.least`), or throws 429 `budget_exceeded`. Call after {@link prepare}. */
  reserve(lines: readonly BudgetLine[], ask: BudgetAsk): Reservation {
    const now = this.now();
    const counts: Count[] = [];
    let room = Infinity;
    for (const line of lines) {
      const { start, end } = periodOf(line.period, now);
      const count = this.counts.get(lineName(line, start)) ?? { used: 0 };
      if (line.tokens - count.used < ask.least) throw budgetRefused(line, count.used, ask.least, end, now);
      room = Math.min(room, line.tokens - count.used);
      counts.push(count);
    }
    const granted = Math.min(ask.want, room);
    for (const c of counts) c.used += granted;
    return { granted, charged: granted, remaining: room - granted, counts };
  }

  /** Replaces a reservation's tokens with what the request used. */
  settle(r: Reservation, used: number): void {
    for (const c of r.counts) c.used += used - r.charged;
    r.charged = used;
  }

  /** Gives back what a reservation holds, also after a settle. */
  refund(r: Reservation): void {
    for (const c of r.counts) c.used -= r.charged;
    r.charged = 0;
  }

  /** What is left of the tightest of `lines` now (undefined for none). Call after {@link prepare}. */
  remaining(lines: readonly BudgetLine[]): number | undefined {
    if (lines.length === 0) return undefined;
    const now = this.now();
    return Math.min(...lines.map((l) => l.tokens - (this.counts.get(lineName(l, periodOf(l.period, now).start))?.used ?? 0)));
  }

  /** Tokens a line has used (and reserved) in its current period, read when not held. */
  async spent(line: BudgetLine): Promise<number> {
    await this.prepare([line]);
    return this.counts.get(lineName(line, periodOf(line.period, this.now()).start))?.used ?? 0;
  }

  /** Drops the counts of periods that have ended (when a new one is read: at most once a line and period). */
  private forgetEnded(now: number): void {
    for (const name of this.counts.keys()) {
      const [, , period, start] = name.split(":");
      if (periodOf(period as BudgetLine["period"], Number(start)).end <= now) this.counts.delete(name);
    }
  }
}
