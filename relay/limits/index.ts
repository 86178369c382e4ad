export { LimitRefusal, RateLimiter, formatDuration, estimateTokens, type Admission, type KeyLimits, type Limiter } from "./rate-limiter.js";
export { RedisRateLimiter } from "./redis-rate-limiter.js";
export { RefusalBudget } from "./refusal-budget.js";
