export { ChangeFeed, type ChangeFeedHooks, type ChangeFeedOptions } from "./change-feed.js";
export { joinFleet, PeerListenError, type Fleet } from "./fleet.js";
export type { StackOnRecord } from "./bus-carrier.js";
