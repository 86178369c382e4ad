export { agentCheckRouter } from "./agent-check-route.js";
export { findInstallDir, loadInstallFiles, type AgentPackage, type InstallFiles } from "./install-files.js";
export { installRouter } from "./install-router.js";
