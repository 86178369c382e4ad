// The generated wire types and gRPC service of agent_link.proto. Only the link's codecs and gRPC transports
// (agent/link, relay/link) and tests that speak the raw protocol import this; everything else uses the
// domain types of proto/link/link-messages.ts.
export * from "./generated/agent_link.js";
