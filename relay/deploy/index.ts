export { Deployer } from "./deployer.js";
export { DeploymentRunner, DEPLOY_STEPS } from "./deployment-runner.js";
