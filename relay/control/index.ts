export { ControlPlane, type Joining, type OrgKeyDefaults, type PlanInput, type StackEdit, type StackEdited, type StackInput, type StackView } from "./control-plane.js";
export { ModelInspector, readGgufHeader, readGgufHeaderOverPublicHttps, type GgufHeaderReader, type ModelInspectorOptions } from "./model-inspector.js";
export { ModelFiles, isLocalModel, type AskMachine, type ModelFileVerdict, type ModelFilesOptions } from "./model-files.js";
/** The records the control plane's operations answer with, for the admin API's handlers (which never read the store). */
export type { ApiKeyChanges, Machine, Organization, RequestFigures, User } from "../store/index.js";
