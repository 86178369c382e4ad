export { AgentRegistry } from "./agent-registry.js";
export { AgentSession, type InferenceCall, type InferOptions, type InferenceUsage, type SessionState } from "./agent-session.js";
export type { InferenceEvent } from "./pending-inference.js";
export { startLinkServer, type LinkServer, type LinkServerOptions } from "./link-server.js";
export { stacksForKey, keyAllowsStack, pickTarget } from "./route-request.js";
