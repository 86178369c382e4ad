export { stacksForKey, keyAllowsStack, pickTarget } from "./route-request.js";
