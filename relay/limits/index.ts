export { RateLimiter, formatDuration, estimateTokens, type Admission, type KeyLimits } from "./rate-limiter.js";
