import { MakinaError } from "../../proto/index.js";

import type { BudgetLine, BudgetPeriod } from "../admin-contract/budgets.js";

export { BUDGET_PERIODS, type Budget, type BudgetLine, type BudgetPeriod } from "../admin-contract/budgets.js";

/** What a budgeted request asks of its budgets: `want` tokens reserved, and no fewer than `least` (else it is refused). */
export interface BudgetAsk {
  want: number;
  least: number;
}

/** Where a line's tokens used so far in a period are read from when its count is not held yet (the usage counts). */
export type BudgetSeed = (line: BudgetLine, since: number) => Promise<number>;

/** The period of `period` that `now` falls in: its first and its last millisecond + 1, UTC. */
export function periodOf(period: BudgetPeriod, now: number): { start: number; end: number } {
  const d = new Date(now);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  if (period === "month") return { start: Date.UTC(y, m, 1), end: Date.UTC(y, m + 1, 1) };
  const day = Date.UTC(y, m, d.getUTCDate());
  if (period === "day") return { start: day, end: day + 86_400_000 };
  // ISO weeks: Monday first.
  const start = day - ((d.getUTCDay() + 6) % 7) * 86_400_000;
  return { start, end: start + 7 * 86_400_000 };
}

/** A line's name in a period, as the books keep it. */
export function lineName(line: BudgetLine, start: number): string {
  return `${line.scope}:${line.id}:${line.period}:${start}`;
}

/** The header every answer to a budgeted key carries: what is left of its tightest budget. */
export function budgetHeaders(remaining: number | undefined): Record<string, string> {
  return remaining === undefined ? {} : { "x-budget-remaining-tokens": String(Math.max(0, Math.floor(remaining))) };
}

/** A budget's refusal, naming the line that refused. */
export class BudgetRefusal extends MakinaError {
  constructor(
    readonly line: BudgetLine,
    message: string,
    retryAfterMs: number,
  ) {
    super("budget_exceeded", message, { retryAfterMs });
  }
}

/** 429 `budget_exceeded`: what the line has left does not cover the request; `Retry-After` is the period's end. */
export function budgetRefused(line: BudgetLine, used: number, least: number, endMs: number, now: number): BudgetRefusal {
  const whose = line.scope === "key" ? "This key's" : "The organization's";
  const left = Math.max(0, line.tokens - used);
  const what = left === 0 ? `it is spent (${used} of ${line.tokens} tokens)` : `${left} of ${line.tokens} tokens are left and this request needs at least ${least}`;
  return new BudgetRefusal(line, `${whose} token budget for ${line.period === "day" ? "today" : `this ${line.period}`} is exceeded: ${what}. It renews at ${new Date(endMs).toISOString()}.`, Math.max(1000, endMs - now));
}
