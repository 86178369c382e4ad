/** Version of the agent link protocol spoken by this build; bumped on incompatible changes. */
export const PROTOCOL_VERSION = 1;

/** gRPC metadata key carrying the machine ID on `AgentLink.Connect`. */
export const MACHINE_ID_METADATA = "x-makina-machine-id";

/** gRPC metadata key carrying `Bearer <machine token>` on `AgentLink.Connect`. */
export const AUTHORIZATION_METADATA = "authorization";

/** Chunks an agent may send for one request before it needs a credit back (per-request flow-control window). */
export const DEFAULT_INITIAL_CREDIT = 32;
