export { HubClient, type HubClientOptions } from "./hub-client.js";
export { quantizationOf, readGgufFiles, readHubRepo, REPO_ID, type HubFile, type HubRepo } from "./hub-repos.js";
