export { planRequest, type PlannableRequest, type PlannerDeps, type RequestPlan } from "./plan-request.js";
export { RoutePatterns } from "./routed-model.js";
export { modelsForKey, type ListedModel } from "./models-for-key.js";
export type { RoutableSession, InferenceTarget } from "./route-request.js";
export { GatewayDirectory, ADMIN_TOKEN_HASH, type ModelCatalog } from "./gateway-directory.js";
export { AdmissionGate, type AdmissionLimits, type Admitted, type QueueAsk } from "./admission-gate.js";
export { servedTier, type AskedTier } from "./served-tier.js";
