/** The calendar periods a token budget runs over, in UTC: a day from midnight, a week from Monday, a month from its 1st. */
export const BUDGET_PERIODS = ["day", "week", "month"] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

/** Tokens (prompt plus completion, as `usage.total_tokens`) a key or an organization may use in each period. */
export interface Budget {
  tokens: number;
  period: BudgetPeriod;
}

/** One budget a request counts against: its key's, or its organization's (which covers every key of it). */
export interface BudgetLine extends Budget {
  scope: "key" | "org";
  /** The key's id, or the organization's. */
  id: string;
  /** The organization the line belongs to (a key's or its own). */
  orgId: string;
}
