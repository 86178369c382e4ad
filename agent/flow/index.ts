// Pacing shared by the link, the supervisor and the runtimes: how long to wait before trying again, and how
// many chunks may leave before the relay asks for more. Below link/, supervisor/ and runtimes/; imports
// nothing of them.
export { Backoff, type BackoffOptions } from "./backoff.js";
export { CreditGate } from "./credit-gate.js";
export { WakeList } from "./wake-list.js";
