export { RelayMetrics, type RequestOutcome, type ResidencyEvent } from "./relay-metrics.js";
