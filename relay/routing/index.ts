export { planRequest, type PlannableRequest, type PlannerDeps, type RequestPlan } from "./plan-request.js";
export { stacksForKey, keyAllowsStack, pickTarget, type RoutableSession } from "./route-request.js";
export { GatewayDirectory, type ModelCatalog } from "./gateway-directory.js";
export { routedModel, type RoutableRequest } from "./routed-model.js";
export { AdmissionGate, type AdmissionLimits, type Admitted } from "./admission-gate.js";
