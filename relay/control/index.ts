export { ControlPlane, type Joining, type OrgKeyDefaults, type PlanInput, type StackInput, type StackView } from "./control-plane.js";
export { ModelInspector, readGgufHeader, readGgufHeaderOverPublicHttps, type GgufHeaderReader, type ModelInspectorOptions } from "./model-inspector.js";
