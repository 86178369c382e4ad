export { RelayMetrics, type RequestOutcome } from "./relay-metrics.js";
