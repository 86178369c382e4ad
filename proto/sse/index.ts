export { bodyText, serverSentEvents, ServerSentEventParser, type ServerSentEvent } from "./server-sent-events.js";
