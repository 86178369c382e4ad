export { UsageRecorder, type UsagePoint, type UsageSample, type UsageSeries, type UsageRecorderOptions } from "./usage-recorder.js";
export { RequestLog, type RequestLogOptions } from "./request-log.js";
export type { CapturedExchange, RequestLogEntry, RequestFilter } from "../store/index.js";
