export { ProcessSupervisor, type SupervisedState, type SupervisorOptions } from "./process-supervisor.js";
export { freePort, httpReady } from "./free-port.js";
