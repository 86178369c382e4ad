export { SignInThrottle, type SignInThrottleOptions } from "./sign-in-throttle.js";
export { SignInGuard, throttledAddress, type SignInGuardOptions } from "./sign-in-guard.js";
export { HashSlots } from "./hash-slots.js";
export { WebSessions, type SessionUser, type SignInResult, type WebSessionsOptions } from "./web-sessions.js";
export { operatorActor, userActor, BOOTSTRAP, type Actor } from "./actor.js";
