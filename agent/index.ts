export { startAgent, type Agent, type StartAgentOptions } from "./start-agent.js";
export { resolveAgentConfig, defaultThreads, AgentConfigError, type AgentConfig, type AgentConfigSources } from "./config.js";
export { detectHardware, type HardwareDetection } from "./hardware/detect-hardware.js";
export { agentVersion } from "./version.js";
