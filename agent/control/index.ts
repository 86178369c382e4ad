// The agent's local control: what its socket serves (the status `makina doctor`, `info`, `runtime list` and
// `model list` read), the models on disk, and this build's version. Light: nothing here loads a runtime.
export type { AgentStatus } from "./agent-status.js";
export { startControlServer, type ControlServer } from "./control-server.js";
export { InventoryReporter } from "./inventory-reporter.js";
export { modelsOnDisk, type ModelOnDisk } from "./models-on-disk.js";
export { agentVersion } from "../version.js";
