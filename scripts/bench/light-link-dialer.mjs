// The light stand-in for the agent's gRPC dialer, for the fleet benchmark (scripts/bench/simulated-agents.mjs):
// the real link protocol (`makina.link.v1.AgentLink/Connect`: gRPC's length-prefixed protobuf messages on one
// HTTP/2 stream, over TLS with the relay's CA, the same metadata and messages as the agent's GrpcDialer), on
// node's http2 directly. grpc-js gives each agent's channel a resolver, a load balancer and a subchannel, which
// is nothing for one agent on its own machine but is too much for 10,000 in one process on the cores the
// relays are measured on. The relays are untouched: they cannot tell this dialer from the agent's.
import { connect, constants } from "node:http2";
import { createSecureContext } from "node:tls";

/**
 * Dials one relay as the agent's GrpcDialer does: `dial(agent)` returns the relay's end of a new link, and calls
 * `agent.reached()` when the relay took the call (its headers came), `agent.send` with each decoded message,
 * `agent.close(reason, refused?)` when the link ends.
 */
export class LightLinkDialer {
  session;

  /** `codec`: the agent's encodeAgentMessage/decodeRelayMessage and the generated AgentMessage/RelayMessage. */
  constructor(server, credentials, secureContext, codec) {
    this.server = server;
    this.credentials = credentials;
    this.secureContext = secureContext;
    this.codec = codec;
  }

  /**
   * One TLS context for every agent of the process (an agent on its own machine makes one for itself). Without
   * the relay's CA in it: a chain that verified would make Node read the whole certificate into objects for the
   * host-name check (a quarter of the simulators' CPU in a profile of 3,000 agents), which an unverified one
   * skips.
   */
  static context(caPem) {
    return caPem ? createSecureContext({}) : null;
  }

  connection() {
    if (this.session && !this.session.closed && !this.session.destroyed) return this.session;
    const tls = this.secureContext !== null;
    // TLS as the agent's, but for one step the agent makes and the relay does not see: the stand-in does not
    // check the relay's certificate (Node reads the whole chain into objects for that, about 1 ms a
    // connection: 10,000 of them would be the simulator's time, not the relays'). The relays' side of every
    // handshake is the same.
    const session = connect(`${tls ? "https" : "http"}://${this.server}`, tls ? { secureContext: this.secureContext, servername: "makina-relay", rejectUnauthorized: false } : {});
    session.on("error", () => {});
    // The agent's own keepalive: a ping every 10 s, the connection dropped when one gets no answer in 10 s.
    const ping = setInterval(() => {
      if (session.destroyed || session.closed) return;
      const timer = setTimeout(() => session.destroy(), 10_000);
      if (!session.ping(() => clearTimeout(timer))) clearTimeout(timer);
    }, 10_000);
    ping.unref();
    session.on("close", () => clearInterval(ping));
    this.session = session;
    return session;
  }

  dial = (agent) => {
    const { encodeAgentMessage, decodeRelayMessage, AgentMessage, RelayMessage } = this.codec;
    let closed = false;
    const close = (reason, refused) => {
      if (closed) return;
      closed = true;
      agent.close(reason, refused);
    };
    const stream = this.connection().request({
      [constants.HTTP2_HEADER_METHOD]: "POST",
      [constants.HTTP2_HEADER_PATH]: "/makina.link.v1.AgentLink/Connect",
      "content-type": "application/grpc",
      te: "trailers",
      "x-makina-machine-id": this.credentials.machineId,
      authorization: `Bearer ${this.credentials.token}`,
    });
    let buffered = Buffer.alloc(0);
    // A refusal may come as headers alone (gRPC's trailers-only answer): its status is in them.
    stream.on("response", (headers) => {
      if (headers["grpc-status"] !== undefined) refused(headers);
      else if (!closed) agent.reached?.();
    });
    stream.on("data", (chunk) => {
      buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
      while (buffered.length >= 5) {
        const length = buffered.readUInt32BE(1);
        if (buffered.length < 5 + length) break;
        const message = decodeRelayMessage(RelayMessage.decode(buffered.subarray(5, 5 + length)));
        buffered = buffered.subarray(5 + length);
        if (message && !closed) agent.send(message);
      }
    });
    const refused = (trailers) => {
      const status = Number(trailers["grpc-status"] ?? 0);
      const details = decodeURIComponent(String(trailers["grpc-message"] ?? ""));
      // UNAUTHENTICATED: the credentials; FAILED_PRECONDITION, INVALID_ARGUMENT: the hello.
      close(status ? `${status}: ${details}` : "the relay closed the link", status === 16 ? "credentials" : status === 9 || status === 3 ? "protocol" : undefined);
    };
    stream.on("trailers", refused);
    stream.on("close", () => close("the relay closed the link"));
    stream.on("error", (err) => close(err.message));
    return {
      send: (message) => {
        if (closed) return;
        const bytes = AgentMessage.encode(encodeAgentMessage(message)).finish();
        const frame = Buffer.allocUnsafe(5 + bytes.length);
        frame[0] = 0;
        frame.writeUInt32BE(bytes.length, 1);
        frame.set(bytes, 5);
        stream.write(frame);
      },
      close: (reason) => {
        if (closed) return;
        close(reason);
        stream.close(constants.NGHTTP2_CANCEL);
      },
    };
  };

  /** Closes the connection; the next dial opens a new one. */
  release() {
    this.session?.destroy();
    this.session = undefined;
  }

  close() {
    this.release();
  }
}
