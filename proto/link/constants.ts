/** Version of the agent link protocol spoken by this build; bumped on incompatible changes. */
export const PROTOCOL_VERSION = 1;

/** gRPC metadata key carrying the machine ID on `AgentLink.Connect`. */
export const MACHINE_ID_METADATA = "x-makina-machine-id";

/** gRPC metadata key carrying `Bearer <machine token>` on `AgentLink.Connect`. */
export const AUTHORIZATION_METADATA = "authorization";

/** Chunks an agent may send for one request before it needs a credit back (per-request flow-control window). */
export const DEFAULT_INITIAL_CREDIT = 32;

/**
 * The name in the certificate of a relay's own link CA setup: agents that pin that CA expect it whatever
 * address they dial (an IP, a name behind NAT), so the address never has to be known when it is made.
 */
export const LINK_TLS_SERVER_NAME = "makina-relay";
