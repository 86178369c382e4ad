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

/** How often each end of a direct connection shows it is there (`{}`), when nothing else was sent. */
const KEEPALIVE_MS = 2000;

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
  /** The parts of a message not ended yet, and their length. */
  private parts: string[] = [];
  private partsLength = 0;
  private lastHeard = performance.now();
  private readonly keepalive: NodeJS.Timeout;

  constructor(
    /** The relay at the other end. */
    readonly relayId: string,
    private readonly socket: TLSSocket,
    onMessage: (message: unknown) => void,
    log: Logger,
    /** The longest message taken, in characters of JSON; a longer one ends the connection. */
    private readonly maxChars: number,
  ) {
    socket.setNoDelay(true);
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      this.lastHeard = performance.now();
      let from = 0;
      let at: number;
      // Only the new chunk is searched, and a message's parts are joined once, when it ends.
      while ((at = chunk.indexOf("\n", from)) >= 0) {
        let line = chunk.slice(from, at);
        from = at + 1;
        if (this.parts.length > 0) {
          this.parts.push(line);
          line = this.parts.join("");
          this.parts = [];
          this.partsLength = 0;
        }
        // `{}`: the other end's keepalive.
        if (line === "{}") continue;
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
      if (from < chunk.length) {
        this.parts.push(from === 0 ? chunk : chunk.slice(from));
        this.partsLength += chunk.length - from;
        if (this.partsLength > this.maxChars) {
          log.warn("a relay sent a message larger than any request: its connection is ended", { relay: relayId });
          socket.destroy();
        }
      }
    });
    // A connection that carries nothing for a while is checked: each end sends `{}` every 2 s, and one that
    // heard nothing for 6 s is taken for cut (a network cut is otherwise seen only by TCP, minutes later).
    this.keepalive = setInterval(() => {
      if (performance.now() - this.lastHeard > KEEPALIVE_MS * 3) {
        log.warn("a direct connection to another relay went silent: it is ended", { relay: relayId });
        return void socket.destroy();
      }
      if (!this.closed) this.socket.write("{}\n");
    }, KEEPALIVE_MS);
    this.keepalive.unref();
    socket.on("error", () => undefined);
    socket.on("close", () => {
      this.closed = true;
      clearInterval(this.keepalive);
      this.parts = [];
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
    if (text.length > this.maxChars) return false;
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

  /** Ends the connection after what was sent on it (ended outright 1 s later). */
  close(): void {
    this.socket.end();
    setTimeout(() => this.socket.destroy(), 1000).unref();
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
    private readonly maxMessageChars: number,
  ) {}

  /** Listens on `host:port` (0: any free port) and announces `host` with the port taken. */
  static async listen(options: {
    host: string;
    port: number;
    relayId: string;
    secret: string;
    handlers: PeerHandlers;
    log: Logger;
    /** The longest message taken on a connection, in characters of JSON (a request with its images). */
    maxMessageChars: number;
  }): Promise<PeerLinks> {
    const { host, port, relayId, handlers, log, maxMessageChars } = options;
    const key = peerKey(options.secret);
    let links: PeerLinks | undefined;
    // The relay id each dialing relay gave in its handshake (proved by the secret there), by connection.
    const identities = new WeakMap<TLSSocket, string>();
    const server = createServer({
      ...TLS,
      // A dial that does not finish its handshake soon is dropped: nobody can park connections here.
      handshakeTimeout: 5000,
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
    server.maxConnections = 1024;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    server.on("error", (err) => log.warn("the peer port had an error", { error: err.message }));
    const taken = (server.address() as AddressInfo).port;
    links = new PeerLinks(server, `${host.includes(":") ? `[${host}]` : host}:${taken}`, relayId, key, handlers, log, maxMessageChars);
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
    const connection: PeerConnection = new PeerConnection(from, socket, (m) => this.handlers.incoming(connection, m), this.log, this.maxMessageChars);
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
      const connection: PeerConnection = new PeerConnection(relayId, socket, (m) => this.handlers.answered(connection, m), this.log, this.maxMessageChars);
      peer.connection = connection;
      this.log.info("linked directly to another relay", { relay: relayId, address: peer.address });
      connection.onClose(() => {
        if (peer.connection === connection) peer.connection = undefined;
      });
    });
  }
}
