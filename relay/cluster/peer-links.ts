import { createHmac } from "node:crypto";
import type { AddressInfo } from "node:net";
import { connect, createServer, type Server, type TLSSocket } from "node:tls";
import type { Logger } from "../../proto/index.js";

/**
 * TLS 1.2 with a pre-shared key and an ephemeral key exchange: both ends prove they hold the relays' shared
 * secret (kept in their database), no certificate is involved, and a recorded connection cannot be read later
 * even with the secret (forward secrecy). Node supports external pre-shared keys up to TLS 1.2 only.
 */
const TLS = { ciphers: "ECDHE-PSK-CHACHA20-POLY1305:ECDHE-PSK-AES256-CBC-SHA384", minVersion: "TLSv1.2", maxVersion: "TLSv1.2" } as const;

/** The most a peer may send in one message, in characters of JSON (a request with its images); more ends the connection. */
const MAX_MESSAGE_CHARS = 256 * 1024 * 1024;

/** How long a dial may take before it is given up, and the least time between two dials of one relay. */
const DIAL_TIMEOUT_MS = 3000;
const REDIAL_MS = 2000;

/** The key both ends derive from the relays' shared secret (the secret itself never enters TLS). */
export function peerKey(secret: string): Buffer {
  return createHmac("sha256", secret).update("makina relay peer link v1").digest();
}

/**
 * One connection between two relays: JSON messages, one per line (JSON text never holds a raw newline), in
 * order. The relay that dialed sends requests and their credit or cancellation; the relay that took it sends
 * their answers back on it.
 */
export class PeerConnection {
  private closed = false;
  private readonly closeHandlers: (() => void)[] = [];
  private buffered = "";

  constructor(
    /** The relay at the other end. */
    readonly relayId: string,
    private readonly socket: TLSSocket,
    onMessage: (message: unknown) => void,
    log: Logger,
  ) {
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 5000);
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      let text = this.buffered + chunk;
      let at: number;
      while ((at = text.indexOf("\n")) >= 0) {
        const line = text.slice(0, at);
        text = text.slice(at + 1);
        let message: unknown;
        try {
          message = JSON.parse(line);
        } catch {
          log.warn("a relay sent a message that is not JSON: its connection is ended", { relay: relayId });
          return void socket.destroy();
        }
        try {
          onMessage(message);
        } catch (err) {
          log.warn("a message from another relay could not be handled", { relay: relayId, error: String(err) });
        }
        if (this.closed) return;
      }
      if (text.length > MAX_MESSAGE_CHARS) {
        log.warn("a relay sent a message larger than any request: its connection is ended", { relay: relayId });
        return void socket.destroy();
      }
      this.buffered = text;
    });
    socket.on("error", () => undefined);
    socket.on("close", () => {
      this.closed = true;
      this.buffered = "";
      for (const handler of this.closeHandlers.splice(0)) handler();
    });
  }

  get open(): boolean {
    return !this.closed;
  }

  /** Sends a message; false when the connection is gone, or the message is larger than a peer takes. */
  send(message: unknown): boolean {
    if (this.closed) return false;
    const text = JSON.stringify(message);
    if (text.length > MAX_MESSAGE_CHARS) return false;
    // What is sent in one turn of the event loop (a short answer's text, its end and its usage) leaves as one
    // TLS record and one packet: the other relay wakes once for it.
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      process.nextTick(this.uncork);
    }
    this.socket.write(text + "\n");
    return true;
  }

  private corked = false;
  private readonly uncork = () => {
    this.corked = false;
    this.socket.uncork();
  };

  /** Called once the connection is gone (at once when it is already). */
  onClose(handler: () => void): void {
    if (this.closed) handler();
    else this.closeHandlers.push(handler);
  }

  close(): void {
    this.socket.destroy();
  }
}

/** What the relay does with what its peers send. */
export interface PeerHandlers {
  /** A message on a connection another relay dialed (its requests, credit and cancellations). */
  incoming(connection: PeerConnection, message: unknown): void;
  /** A message on a connection this relay dialed (the answers to its requests). */
  answered(connection: PeerConnection, message: unknown): void;
}

/**
 * Direct connections between the relays of one fleet, for requests crossing relays: one TCP hop each way
 * instead of two through NATS. NATS still says which relay holds which machine, and where each relay takes its
 * peers' connections (`--peer-address`); a request goes direct when a connection to the relay holding its
 * machine is open, and over NATS otherwise (a relay that cannot be dialed, or one that announces no address).
 * Each relay dials every other relay it hears of once (again at most every 2 s while it cannot), and the ends
 * check each other's relay id and the shared secret in the TLS handshake.
 */
export class PeerLinks {
  private readonly dialed = new Map<string, { address: string; connection?: PeerConnection; dialing: boolean; lastDial: number }>();
  private readonly taken = new Set<PeerConnection>();
  private closing = false;

  private constructor(
    private readonly server: Server,
    /** Where this relay takes its peers' connections, as announced to them. */
    readonly address: string,
    private readonly relayId: string,
    private readonly key: Buffer,
    private readonly handlers: PeerHandlers,
    private readonly log: Logger,
  ) {}

  /** Listens on `host:port` (0: any free port) and announces `host` with the port taken. */
  static async listen(options: { host: string; port: number; relayId: string; secret: string; handlers: PeerHandlers; log: Logger }): Promise<PeerLinks> {
    const { host, port, relayId, handlers, log } = options;
    const key = peerKey(options.secret);
    let links: PeerLinks | undefined;
    // The relay id each dialing relay gave in its handshake (proved by the secret there), by connection.
    const identities = new WeakMap<TLSSocket, string>();
    const server = createServer({
      ...TLS,
      pskIdentityHint: relayId,
      pskCallback: (socket, identity) => {
        if (!/^[A-Za-z0-9_-]{1,64}$/.test(identity) || identity === relayId) return null;
        identities.set(socket, identity);
        return key;
      },
    });
    server.on("secureConnection", (socket: TLSSocket) => links?.took(socket, identities.get(socket)));
    // A dial without the secret fails its handshake: nothing to do but let it go.
    server.on("tlsClientError", (err, socket) => {
      log.debug("a connection to the peer port failed its handshake", { from: socket.remoteAddress, error: err.message });
      socket.destroy();
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => resolve());
    });
    const taken = (server.address() as AddressInfo).port;
    links = new PeerLinks(server, `${host.includes(":") ? `[${host}]` : host}:${taken}`, relayId, key, handlers, log);
    return links;
  }

  /** The connection to a relay, when one is open now. */
  open(relayId: string): PeerConnection | undefined {
    const c = this.dialed.get(relayId)?.connection;
    return c?.open ? c : undefined;
  }

  /** A relay announced where it takes connections: dialed unless a connection is open or being made. */
  know(relayId: string, address: string): void {
    if (this.closing || relayId === this.relayId) return;
    let peer = this.dialed.get(relayId);
    if (peer && peer.address !== address) {
      // It moved (restarted elsewhere): the old connection goes, a new one is made.
      peer.connection?.close();
      peer = undefined;
    }
    if (!peer) {
      peer = { address, dialing: false, lastDial: -Infinity };
      this.dialed.set(relayId, peer);
    }
    if (peer.dialing || peer.connection?.open || performance.now() - peer.lastDial < REDIAL_MS) return;
    this.dial(relayId, peer);
  }

  /** A relay is gone: its connection is closed and it is not dialed again until it announces itself. */
  forget(relayId: string): void {
    this.dialed.get(relayId)?.connection?.close();
    this.dialed.delete(relayId);
  }

  close(): void {
    this.closing = true;
    this.server.close();
    for (const id of [...this.dialed.keys()]) this.forget(id);
    for (const c of this.taken) c.close();
  }

  private took(socket: TLSSocket, from: string | undefined): void {
    if (this.closing || !from) return void socket.destroy();
    const connection: PeerConnection = new PeerConnection(from, socket, (m) => this.handlers.incoming(connection, m), this.log);
    this.taken.add(connection);
    connection.onClose(() => this.taken.delete(connection));
  }

  private dial(relayId: string, peer: { address: string; connection?: PeerConnection; dialing: boolean; lastDial: number }): void {
    const at = peer.address.lastIndexOf(":");
    const host = peer.address.slice(0, at).replace(/^\[(.*)\]$/, "$1");
    const port = Number(peer.address.slice(at + 1));
    peer.dialing = true;
    peer.lastDial = performance.now();
    const socket = connect({
      ...TLS,
      host,
      port,
      // The relay at that address says who it is in the handshake: only the relay expected is taken.
      pskCallback: (hint) => (hint === relayId ? { psk: this.key, identity: this.relayId } : null),
      checkServerIdentity: () => undefined,
    });
    const timer = setTimeout(() => socket.destroy(new Error("no answer")), DIAL_TIMEOUT_MS);
    const failed = (err: Error) => {
      clearTimeout(timer);
      peer.dialing = false;
      this.log.debug("another relay cannot be dialed directly: requests for its machines go over NATS", { relay: relayId, address: peer.address, error: err.message });
    };
    socket.once("error", failed);
    socket.once("secureConnect", () => {
      clearTimeout(timer);
      socket.off("error", failed);
      peer.dialing = false;
      if (this.closing || this.dialed.get(relayId) !== peer) return void socket.destroy();
      const connection: PeerConnection = new PeerConnection(relayId, socket, (m) => this.handlers.answered(connection, m), this.log);
      peer.connection = connection;
      this.log.info("linked directly to another relay", { relay: relayId, address: peer.address });
      connection.onClose(() => {
        if (peer.connection === connection) peer.connection = undefined;
      });
    });
  }
}
