export { Deployer, DEPLOY_STEPS } from "./deployer.js";
