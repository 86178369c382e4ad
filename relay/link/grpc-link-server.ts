import { Metadata, Server, ServerCredentials, status, type ServerDuplexStream } from "@grpc/grpc-js";
import { lookup } from "node:dns/promises";
import { createServer, isIP, type AddressInfo, type Server as NetServer, type Socket } from "node:net";
import { AUTHORIZATION_METADATA, MACHINE_ID_METADATA, type LinkAcceptor, type LinkRefusal } from "../../proto/index.js";
import { AgentLinkService, RelayMessage, type AgentMessage } from "../../proto/wire.js";
import type { AgentRegistry } from "./agent-registry.js";
import { bearerToken } from "../keys/index.js";
import { decodeAgentMessage, encodeRelayMessage } from "./relay-link-codec.js";

/** Options of {@link startLinkServer}. */
export interface LinkServerOptions {
  accept: LinkAcceptor;
  registry: AgentRegistry;
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** The certificate chain and key to serve TLS with; absent for plaintext. */
  tls?: { certChain: Buffer; privateKey: Buffer };
}

/** The running gRPC server agents dial. */
export interface LinkServer {
  readonly port: number;
  /** Stops accepting links and ends every open one. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Connections the kernel keeps waiting to be accepted (capped by `net.core.somaxconn`, 4096 on Linux since
 * 5.4): room for thousands of machines relinking at once.
 */
const ACCEPT_BACKLOG = 4096;

/**
 * Bytes of large messages waiting to leave for one agent beyond which its link counts as not draining.
 * Ordinary bursts (a few prompts, credit) stay far below; a backlog this size means the agent stopped reading,
 * and routing then avoids the machine. In bytes: a thousand 4 MiB prompts were not "congested" by number.
 */
const CONGESTED_BYTES = 4 * 1024 * 1024;
/** Messages waiting beyond which a link counts as not draining, whatever their size (grpc-js's own mark is 16). */
const CONGESTED_BACKLOG = 1024;
/** Messages from this size on are counted in bytes. */
const COUNTED_BYTES = 4096;

/**
 * The link's service as the relay serves it: its answers go out already encoded, so the relay knows each
 * one's size (encoded once, as grpc-js would have).
 */
const LINK_SERVICE = { connect: { ...AgentLinkService.connect, responseSerialize: (value: Buffer): Buffer => value } } as const;

/** The gRPC status an agent sees for a refused link. */
function refusalStatus(refused: LinkRefusal, reason: string): status {
  if (refused === "credentials") return status.UNAUTHENTICATED;
  if (reason.startsWith("No hello")) return status.DEADLINE_EXCEEDED;
  return reason.startsWith("Protocol version") ? status.FAILED_PRECONDITION : status.INVALID_ARGUMENT;
}

/** One agent's link call: its credentials to the acceptor, its messages both ways, its end. */
function serveLink(call: ServerDuplexStream<AgentMessage, Buffer>, accept: LinkServerOptions["accept"]): void {
  const machineId = String(call.metadata.get(MACHINE_ID_METADATA)[0] ?? "");
  const auth = String(call.metadata.get(AUTHORIZATION_METADATA)[0] ?? "");
  const token = bearerToken(auth) ?? "";
  let closed = false;
  // Bytes handed to grpc-js and not yet written out to the agent's connection.
  let waitingBytes = 0;
  // The headers go at once: the agent knows this relay took its call, and waits for the welcome (which
  // needs the database) longer than for a relay that does not answer at all.
  call.sendMetadata(new Metadata());
  const relay = accept(
    { machineId, token },
    {
      send: (message) => {
        if (closed) return;
        const bytes = Buffer.from(RelayMessage.encode(encodeRelayMessage(message)).finish());
        // Large messages (prompts) are counted out as they are written; the small ones (credit, cancels, most
        // prompts) only by their number, without a callback each on the streaming path.
        if (bytes.length < COUNTED_BYTES) return void call.write(bytes);
        waitingBytes += bytes.length;
        call.write(bytes, () => (waitingBytes -= bytes.length));
      },
      congested: () => waitingBytes > CONGESTED_BYTES || call.writableLength > CONGESTED_BACKLOG,
      close: (reason, refused) => {
        if (closed) return;
        closed = true;
        if (refused) {
          call.emit("error", { code: refusalStatus(refused, reason), details: reason });
          return;
        }
        try {
          call.end();
        } catch {
          // The call may already be finished; ending it again is harmless.
        }
      },
    },
  );
  call.on("data", (message: AgentMessage) => {
    const decoded = decodeAgentMessage(message);
    if (decoded) relay.send(decoded);
  });
  const gone = () => relay.close("the agent closed the link");
  call.on("end", () => {
    gone();
    try {
      call.end();
    } catch {
      // Already ended.
    }
  });
  call.on("error", gone);
  call.on("cancelled", gone);
  call.on("close", gone);
}

/** Starts the gRPC server that agents on other machines connect to: one `Connect` stream per agent. */
export async function startLinkServer(options: LinkServerOptions): Promise<LinkServer> {
  const server = new Server({
    // Ping idle agents so a vanished peer is noticed even when its heartbeats could not say so (an agent
    // silent for 3.5 heartbeats is dropped sooner). Not tighter: an agent, or this relay, busy with thousands
    // of links at once answers late, and dropping live links then only brings them all back.
    "grpc.keepalive_time_ms": 10_000,
    "grpc.keepalive_timeout_ms": 10_000,
    "grpc.keepalive_permit_without_calls": 1,
    "grpc.http2.min_ping_interval_without_data_ms": 1_000,
    "grpc.max_receive_message_length": 8 * 1024 * 1024,
  });

  server.addService(LINK_SERVICE, {
    connect: (call: ServerDuplexStream<AgentMessage, Buffer>) => serveLink(call, options.accept),
  });

  // Our own listener, its connections handed to grpc-js: grpc-js listens with Node's default backlog (511),
  // and a fleet relinking at once to a relay that lost its peer overflows that queue. Dropped connection
  // attempts are retried by TCP only after 1, 3 and 7 s, past the agents' 5 s answer timeout.
  const injector = server.createConnectionInjector(
    options.tls ? ServerCredentials.createSsl(null, [{ cert_chain: options.tls.certChain, private_key: options.tls.privateKey }], false) : ServerCredentials.createInsecure(),
  );
  // Every connection is tracked until it closes: one accepted just before the relay stops may finish its TLS
  // handshake after grpc-js closed the sessions it knew of, and would live on.
  const sockets = new Set<Socket>();
  let accepting = true;
  const accept = (socket: Socket) => {
    if (!accepting) return void socket.destroy();
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    injector.injectConnection(socket);
  };
  // A name (`localhost`) is listened on at each of its addresses, on one port, as grpc-js did.
  const hosts = isIP(options.host) ? [options.host] : [...new Set((await lookup(options.host, { all: true })).map((a) => a.address))];
  const listeners: NetServer[] = [];
  let port = options.port;
  try {
    for (const host of hosts) {
      const listener = createServer({ noDelay: true }, accept);
      listeners.push(listener);
      await new Promise<void>((resolve, reject) => {
        listener.once("error", reject);
        listener.listen({ host, port, backlog: ACCEPT_BACKLOG }, () => {
          listener.off("error", reject);
          resolve();
        });
      });
      port = (listener.address() as AddressInfo).port;
    }
  } catch (err) {
    for (const l of listeners) l.close();
    server.forceShutdown();
    throw err;
  }

  let stopping: Promise<void> | undefined;
  return {
    port,
    stop() {
      stopping ??= new Promise<void>((resolve) => {
        for (const s of options.registry.all()) s.end("the relay is stopping");
        accepting = false;
        const closed = Promise.all(listeners.map((l) => new Promise<void>((done) => l.close(() => done()))));
        const finish = () => {
          clearTimeout(force);
          // Connections grpc-js did not know of yet (still in their handshake) end here too.
          for (const socket of sockets) socket.destroy();
          void closed.then(() => resolve());
        };
        const force = setTimeout(() => {
          server.forceShutdown();
          finish();
        }, 2_000);
        server.tryShutdown(finish);
      });
      return stopping;
    },
  };
}
