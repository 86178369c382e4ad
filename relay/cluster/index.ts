export { ChangeFeed, type ChangeFeedHooks, type ChangeFeedOptions } from "./change-feed.js";
