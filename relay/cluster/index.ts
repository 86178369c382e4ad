export { ChangeFeed, type ChangeFeedHooks, type ChangeFeedOptions } from "./change-feed.js";
export { joinFleet, type Fleet } from "./fleet.js";
