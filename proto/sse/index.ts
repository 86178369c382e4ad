export { bodyText, serverSentEvents, type ServerSentEvent } from "./server-sent-events.js";
