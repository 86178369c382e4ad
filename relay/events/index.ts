export { EventBus, type RelayEvent } from "./event-bus.js";
