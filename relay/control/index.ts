export { ControlPlane, type Joining, type OrgKeyDefaults, type PlanInput, type StackInput, type StackView } from "./control-plane.js";
export { defaultModelId } from "./stack-facts.js";
export { ModelInspector, readGgufHeader, type GgufHeaderReader, type ModelInspectorOptions } from "./model-inspector.js";
