import { describedBy, Field } from "./field.js";

export type Budget = { tokens: number; period: "day" | "week" | "month" };

/** A budget's use: a meter (amber from 80%, red from 95%) and "1,234 of 100,000 tokens this month". */
export function BudgetMeter({ budget, spent, testId }: { budget: Budget; spent: number | null; testId?: string }) {
  const used = spent ?? 0;
  return (
    <div class="budget" data-testid={testId}>
      <meter min={0} max={budget.tokens} value={Math.min(used, budget.tokens)} low={budget.tokens * 0.8} high={budget.tokens * 0.95} optimum={0} />
      {used.toLocaleString("en-US")} of {budget.tokens.toLocaleString("en-US")} tokens {budget.period === "day" ? "today" : `this ${budget.period}`}
    </div>
  );
}

/** A budget as typed: its tokens (empty: none) and its period. */
export interface TypedBudget {
  tokens: string;
  period: Budget["period"];
}

export const typedBudget = (b: Budget | null | undefined): TypedBudget => ({ tokens: b ? String(b.tokens) : "", period: b?.period ?? "month" });

/** The budget typed, as the API takes it: null when no tokens are given. */
export const budgetOf = (t: TypedBudget): Budget | null => (t.tokens.trim() === "" ? null : { tokens: Number(t.tokens), period: t.period });

/** The fields of a token budget: how many tokens, and per what (calendar periods in UTC). */
export function BudgetFields({ id, value, onChange, error, disabled }: { id: string; value: TypedBudget; onChange: (v: TypedBudget) => void; error: string | null; disabled?: boolean }) {
  return (
    <>
      <Field id={`${id}-tokens`} label="Token budget" hint={disabled ? "Admins set it." : "Prompt and completion tokens. Empty: none."} error={error}>
        <input id={`${id}-tokens`} type="number" min="1" step="1" inputMode="numeric" value={value.tokens} disabled={disabled} onInput={(e) => onChange({ ...value, tokens: e.currentTarget.value })} aria-describedby={describedBy(`${id}-tokens`, error)} />
      </Field>
      <Field id={`${id}-period`} label="Budget period" hint="Calendar periods, UTC.">
        <select id={`${id}-period`} value={value.period} disabled={disabled} aria-describedby={`${id}-period-hint`} onChange={(e) => onChange({ ...value, period: e.currentTarget.value as Budget["period"] })}>
          <option value="day">Day</option>
          <option value="week">Week</option>
          <option value="month">Month</option>
        </select>
      </Field>
    </>
  );
}
