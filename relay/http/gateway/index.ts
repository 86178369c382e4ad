export { gatewayRoute, type GatewayDeps } from "./gateway-route.js";
export type { AnswerMeta, CollectedAnswer, GatewayCodec, StreamEncoder } from "./gateway-codec.js";
export { SseWriter } from "./sse-writer.js";
