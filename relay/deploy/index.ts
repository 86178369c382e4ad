export { Deployer, DEPLOY_STEPS, type DeploymentsElsewhere } from "./deployer.js";
