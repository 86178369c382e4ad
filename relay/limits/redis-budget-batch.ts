import type { BudgetAsk, BudgetLine } from "./token-budget.js";

/** One budget count an admission touches: its name in Redis, its line, its limit, and when it leaves Redis. */
export interface BudgetCount {
  name: string;
  line: BudgetLine;
  expiresAt: number;
}

/** What Redis answered one admission: admitted with `granted` tokens, or refused by its `line`-th count (from 1). */
export type BudgetVerdict = { admitted: true; granted: number; left: number } | { admitted: false; line: number; left: number; used: number };

interface Waiting {
  counts: BudgetCount[];
  ask: BudgetAsk;
  resolve(verdict: BudgetVerdict): void;
  reject(err: unknown): void;
}

/** The most admissions one script checks: a flood of one organization's requests is sent in scripts of this many, in order. */
const MOST_AT_ONCE = 256;

/** Runs ADMIT_BUDGETS: KEYS, then ARGV. */
export type SendBudgets = (names: string[], args: number[]) => Promise<number[]>;

/**
 * Admissions of keys that have budgets and no rate limits, gathered per organization over one turn of the event
 * loop and sent to Redis as one script (ADMIT_BUDGETS), which checks and reserves each in order, atomically:
 * as exact as one script per admission, for one round trip and one script run per organization and turn.
 * A count Redis lacks is seeded from the usage counts (`seedOf`) and the batch sent again; an admission whose
 * seed cannot be read is refused with that error, the others go on.
 */
export class BudgetBatches {
  private waiting = new Map<string, Waiting[]>();
  private scheduled = false;

  constructor(
    private readonly send: SendBudgets,
    private readonly seedOf: (line: BudgetLine) => Promise<number>,
  ) {}

  /** Admits one request of organization `tag` against its `counts` (all of one hash tag). */
  admit(tag: string, counts: BudgetCount[], ask: BudgetAsk): Promise<BudgetVerdict> {
    return new Promise((resolve, reject) => {
      let of = this.waiting.get(tag);
      if (!of) this.waiting.set(tag, (of = []));
      of.push({ counts, ask, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const all = this.waiting;
    this.waiting = new Map();
    for (const batch of all.values()) void this.runAll(batch);
  }

  /** One organization's admissions of a turn, at most {@link MOST_AT_ONCE} a script, in the order they came. */
  private async runAll(batch: Waiting[]): Promise<void> {
    for (let i = 0; i < batch.length; i += MOST_AT_ONCE) await this.run(batch.slice(i, i + MOST_AT_ONCE));
  }

  /** Sends one organization's batch until every admission in it has its verdict (or its error). */
  private async run(batch: Waiting[]): Promise<void> {
    const seeds = new Map<string, number>();
    while (batch.length) {
      const index = new Map<string, number>();
      const names: string[] = [];
      const countArgs: number[] = [];
      const admissionArgs: number[] = [];
      const lines = new Map<string, BudgetLine>();
      for (const w of batch) {
        admissionArgs.push(w.counts.length, w.ask.want, w.ask.least);
        for (const c of w.counts) {
          let i = index.get(c.name);
          if (i === undefined) {
            index.set(c.name, (i = names.length + 1));
            names.push(c.name);
            lines.set(c.name, c.line);
            countArgs.push(c.line.tokens, seeds.get(c.name) ?? -1, c.expiresAt);
          }
          admissionArgs.push(i);
        }
      }
      let answer: number[];
      try {
        answer = await this.send(names, [names.length, ...countArgs, ...admissionArgs]);
      } catch (err) {
        return this.failAll(batch, err);
      }
      if (answer[0] === -1) {
        // Counts Redis lacks: read from the usage counts, then the whole batch again (nothing was reserved).
        for (const i of answer.slice(1)) {
          const name = names[i - 1];
          // Only a count sent without a seed can be missing: any other answer is not this script's.
          if (name === undefined || seeds.has(name)) return this.failAll(batch, new Error("Redis answered a budget admission with counts it was not sent"));
          try {
            // Whole and not negative, as a count in Redis must be.
            seeds.set(name, Math.max(0, Math.floor((await this.seedOf(lines.get(name)!)) || 0)));
          } catch (err) {
            for (const w of batch.filter((w) => w.counts.some((c) => c.name === name))) w.reject(err);
            batch = batch.filter((w) => !w.counts.some((c) => c.name === name));
          }
        }
        continue;
      }
      if (answer.length !== batch.length * 4) return this.failAll(batch, new Error(`Redis answered ${answer.length} numbers for ${batch.length} budget admissions`));
      batch.forEach((w, k) => {
        const [admitted, a, left, used] = answer.slice(k * 4, k * 4 + 4) as [number, number, number, number];
        w.resolve(admitted ? { admitted: true, granted: a, left } : { admitted: false, line: a, left, used });
      });
      return;
    }
  }

  private failAll(batch: Waiting[], err: unknown): void {
    for (const w of batch) w.reject(err);
  }
}
