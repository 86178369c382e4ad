export { LinkCarrier, type LocalDeployments } from "./link-carrier.js";
export { MachineReach, type MachineHandle } from "./machine-reach.js";
export type { MachineCarrier, ModelCheck } from "./machine-carrier.js";
export { cleanLog, MAX_LOG_LINES, withinReplySize } from "./machine-log.js";
