import { credentials as channelCredentials, Metadata, status, type ChannelCredentials, type ChannelOptions, type ServiceError } from "@grpc/grpc-js";
import { readFileSync } from "node:fs";
import { AUTHORIZATION_METADATA, LINK_TLS_SERVER_NAME, MACHINE_ID_METADATA, type AgentToRelay, type LinkCredentials, type LinkDialer } from "../../proto/index.js";
import { AgentLinkClient, type RelayMessage } from "../../proto/wire.js";
import { decodeRelayMessage, encodeAgentMessage } from "./agent-link-codec.js";
import type { RelayDialer } from "./failover-dialer.js";
import { pinnedCa } from "./pinned-ca.js";

/** How the link is protected: see the agent's `caSha256`, `caFile` and `tls` settings. */
export interface LinkSecurity {
  /** Trust only the relay's own CA with this fingerprint; it is kept in `caCacheFile` once seen. */
  caSha256: string | null;
  caCacheFile: string;
  /** Trust this CA. */
  caFile: string | null;
  /** Trust the system's CAs. */
  tls: boolean;
}

const CHANNEL_OPTIONS: ChannelOptions = {
  // A relay busy with thousands of machines relinking may answer a ping late: it is not dead for that.
  "grpc.keepalive_time_ms": 10_000,
  "grpc.keepalive_timeout_ms": 10_000,
  "grpc.keepalive_permit_without_calls": 1,
  "grpc.max_receive_message_length": 64 * 1024 * 1024,
  "grpc.initial_reconnect_backoff_ms": 250,
  // A connection of its own, never shared with another client of the process for the same address (the
  // fleet benchmark runs thousands of agents in one process, each linked as if from its own machine).
  "grpc.use_local_subchannel_pool": 1,
};

/**
 * Dials a relay on another machine over gRPC: one `Connect` stream per link, over one reused channel; TLS
 * unless the link is plaintext by choice (loopback, or `--insecure`).
 */
export class GrpcDialer implements RelayDialer {
  private client: Promise<AgentLinkClient> | undefined;

  constructor(
    private readonly server: string,
    private readonly credentials: LinkCredentials,
    private readonly security: LinkSecurity,
    /**
     * The `--server` entry `server` is an address of, when it is one of a name's addresses: a certificate
     * checked against a CA file or the system's CAs must name that host. @default server
     */
    private readonly authority: string = server,
  ) {}

  private async channel(): Promise<{ creds: ChannelCredentials; options: ChannelOptions }> {
    const { caSha256, caCacheFile, caFile, tls } = this.security;
    if (caSha256) {
      const ca = await pinnedCa(this.server, caSha256, caCacheFile);
      // The relay's own certificates name it LINK_TLS_SERVER_NAME whatever address it is reached at.
      return {
        creds: channelCredentials.createSsl(Buffer.from(ca)),
        options: { ...CHANNEL_OPTIONS, "grpc.ssl_target_name_override": LINK_TLS_SERVER_NAME, "grpc.default_authority": LINK_TLS_SERVER_NAME },
      };
    }
    const named =
      this.authority === this.server
        ? CHANNEL_OPTIONS
        : { ...CHANNEL_OPTIONS, "grpc.ssl_target_name_override": this.authority.replace(/:\d+$/, "").replace(/^\[|\]$/g, ""), "grpc.default_authority": this.authority };
    if (caFile) return { creds: channelCredentials.createSsl(readFileSync(caFile)), options: named };
    if (tls) return { creds: channelCredentials.createSsl(), options: named };
    return { creds: channelCredentials.createInsecure(), options: CHANNEL_OPTIONS };
  }

  readonly dial: LinkDialer = (agent) => {
    let closed = false;
    let call: ReturnType<AgentLinkClient["connect"]> | undefined;
    const waiting: AgentToRelay[] = [];
    const close = (reason: string, refused?: "credentials" | "protocol") => {
      if (closed) return;
      closed = true;
      agent.close(reason, refused);
    };
    this.client ??= this.channel().then(({ creds, options }) => new AgentLinkClient(this.server, creds, options));
    this.client.then(
      (client) => {
        if (closed) return;
        const metadata = new Metadata();
        metadata.set(MACHINE_ID_METADATA, this.credentials.machineId);
        metadata.set(AUTHORIZATION_METADATA, `Bearer ${this.credentials.token}`);
        const c = client.connect(metadata);
        call = c;
        c.once("metadata", () => !closed && agent.reached?.());
        c.on("data", (message: RelayMessage) => {
          const decoded = decodeRelayMessage(message);
          if (decoded && !closed) agent.send(decoded);
        });
        c.on("error", (err: ServiceError) => {
          const refused = err.code === status.UNAUTHENTICATED ? "credentials" : err.code === status.FAILED_PRECONDITION || err.code === status.INVALID_ARGUMENT ? "protocol" : undefined;
          close(`${status[err.code] ?? err.code}: ${err.details}`, refused);
        });
        c.on("end", () => close("the relay closed the link"));
        for (const m of waiting.splice(0)) c.write(encodeAgentMessage(m));
      },
      (err: unknown) => {
        // No channel (the relay's CA could not be had or was not the pinned one): try again on the next dial.
        this.client = undefined;
        close(err instanceof Error ? err.message : String(err));
      },
    );
    return {
      send: (message) => {
        if (closed) return;
        if (call) call.write(encodeAgentMessage(message));
        else waiting.push(message);
      },
      close: (reason) => {
        if (closed) return;
        close(reason);
        call?.cancel();
      },
    };
  };

  /** Releases the channel. */
  close(): void {
    void this.client?.then((c) => c.close(), () => {});
  }

  /** Releases the channel, and opens a new one on the next dial (while links go to another relay). */
  release(): void {
    this.close();
    this.client = undefined;
  }
}
