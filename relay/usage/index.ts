export { UsageRecorder, type UsagePoint, type UsageSample, type UsageSeries, type UsageRecorderOptions } from "./usage-recorder.js";
