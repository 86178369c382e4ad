export { ControlPlane, defaultModelId, type StackInput, type StackView } from "./control-plane.js";
export { checkCompatibility, type Compatibility, type CompatibilityCheck } from "./compatibility.js";
