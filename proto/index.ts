export * from "./link/link-messages.js";
export { inProcessDialer } from "./link/in-process-link.js";
export { PROTOCOL_VERSION, MACHINE_ID_METADATA, AUTHORIZATION_METADATA, DEFAULT_INITIAL_CREDIT, LINK_TLS_SERVER_NAME } from "./link/constants.js";
export { toErrorReport, fromErrorReport } from "./link/link-error.js";
export * from "./errors/index.js";
export * from "./log/index.js";
export { RUNTIME_CAPABILITIES, honouredParameters, harnessHonouring, RUNTIME_LAYERS, HARNESS_KINDS, ORCHESTRATOR_KINDS, type RuntimeKind } from "./runtimes/runtime-capabilities.js";
export { LAYER_OPTIONS, validateLayerOptions, orchestratorSteps, DEFAULT_REFINE_ROUNDS, DEFAULT_VOTE_SAMPLES, type LayerOptionSpec, type LayerOptionValue, type RouteRule } from "./runtimes/layer-options.js";
export { parseHfRef, hfResolveUrl, type HfRef } from "./models/hf-ref.js";
