export { stacksForKey, keyAllowsStack, pickTarget } from "./route-request.js";
export { GatewayDirectory } from "./gateway-directory.js";
export { routedModel, type RoutableRequest } from "./routed-model.js";
export { AdmissionGate, type AdmissionLimits, type Admitted } from "./admission-gate.js";
