export { AgentRegistry } from "./agent-registry.js";
export { AgentSession, assertEncodable, type InferOptions, type SessionState } from "./agent-session.js";
export { linkAcceptor, type LinkAcceptorDeps } from "./link-acceptor.js";
export { startLinkServer, type LinkServer, type LinkServerOptions } from "./grpc-link-server.js";
export { checkMachineCredentials } from "./machine-credentials.js";
export { loadLinkTls, certificateSha256, publicKeyPin, type LinkTls } from "./link-tls.js";
export { PendingInference } from "./pending-inference.js";
export { shareLinkCertificates } from "./shared-link-certificates.js";
export { MachineLoads, cleanLoad, type ReceivedLoad } from "./machine-loads.js";
