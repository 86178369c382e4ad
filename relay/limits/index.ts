export { LimitRefusal, RateLimiter, formatDuration, estimateTokens, type Admission, type KeyLimits, type Limiter } from "./rate-limiter.js";
export { BudgetBook } from "./budget-book.js";
export { BUDGET_PERIODS, periodOf, type Budget, type BudgetAsk, type BudgetLine, type BudgetPeriod, type BudgetSeed } from "./token-budget.js";
export { RedisRateLimiter } from "./redis-rate-limiter.js";
export { RefusalBudget } from "./refusal-budget.js";
