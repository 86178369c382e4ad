import { credentials as channelCredentials, Metadata, status, type ServiceError } from "@grpc/grpc-js";
import { AUTHORIZATION_METADATA, MACHINE_ID_METADATA, type LinkCredentials, type LinkDialer } from "../../proto/index.js";
import { AgentLinkClient, type RelayMessage } from "../../proto/wire.js";
import { decodeRelayMessage, encodeAgentMessage } from "./agent-link-codec.js";

/** Dials a relay on another machine over gRPC: one `Connect` stream per link, over one reused channel. */
export class GrpcDialer {
  private readonly client: AgentLinkClient;

  constructor(
    server: string,
    private readonly credentials: LinkCredentials,
  ) {
    this.client = new AgentLinkClient(server, channelCredentials.createInsecure(), {
      "grpc.keepalive_time_ms": 10_000,
      "grpc.keepalive_timeout_ms": 5_000,
      "grpc.keepalive_permit_without_calls": 1,
      "grpc.max_receive_message_length": 64 * 1024 * 1024,
      "grpc.initial_reconnect_backoff_ms": 250,
    });
  }

  readonly dial: LinkDialer = (agent) => {
    const metadata = new Metadata();
    metadata.set(MACHINE_ID_METADATA, this.credentials.machineId);
    metadata.set(AUTHORIZATION_METADATA, `Bearer ${this.credentials.token}`);
    const call = this.client.connect(metadata);
    let closed = false;
    const close = (reason: string, refused?: "credentials" | "protocol") => {
      if (closed) return;
      closed = true;
      agent.close(reason, refused);
    };
    call.on("data", (message: RelayMessage) => {
      const decoded = decodeRelayMessage(message);
      if (decoded && !closed) agent.send(decoded);
    });
    call.on("error", (err: ServiceError) => {
      const refused = err.code === status.UNAUTHENTICATED ? "credentials" : err.code === status.FAILED_PRECONDITION || err.code === status.INVALID_ARGUMENT ? "protocol" : undefined;
      close(`${status[err.code] ?? err.code}: ${err.details}`, refused);
    });
    call.on("end", () => close("the relay closed the link"));
    return {
      send: (message) => {
        if (!closed) call.write(encodeAgentMessage(message));
      },
      close: (reason) => {
        if (closed) return;
        close(reason);
        call.cancel();
      },
    };
  };

  /** Releases the channel. */
  close(): void {
    this.client.close();
  }
}
