export { stacksForKey, keyAllowsStack, pickTarget } from "./route-request.js";
export { GatewayDirectory } from "./gateway-directory.js";
