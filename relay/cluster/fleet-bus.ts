import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "../../proto/index.js";

/** What a subscriber gets: the message decoded, and the subject it came on. */
export type BusHandler = (message: unknown, subject: string) => void;

/** How the bus's state changes reach the relay. */
export interface BusEvents {
  /** The connection to NATS is lost (messages published meanwhile are lost). */
  disconnected(): void;
  /** Connected again, subscriptions restored. */
  reconnected(): void;
}

/**
 * The relays' bus (`@nats-io/transport-node`, pinned to 3.3: 3.4 brings a dependency that declares Node 22,
 * and the README promises Node 20.19): one NATS connection per relay, carrying JSON messages between relays (the machines each
 * holds, requests crossing relays and their streamed answers). Core NATS, no persistence: a message published
 * while a relay is not connected is lost, and the parts on top are written for that (announcements repeat,
 * requests in flight fail). The client reconnects forever, every 0.5 s with jitter.
 */
export class FleetBus {
  private up = true;
  private readonly subscriptions: Subscription[] = [];
  private readonly encoder = new TextEncoder();
  private readonly decoder = new TextDecoder();

  private constructor(
    private readonly nc: NatsConnection,
    private readonly log: Logger,
  ) {}

  /** Connects (waiting up to 5 s for the first connection) and follows the connection's state. */
  static async connect(url: string, options: { name: string; log: Logger; events: BusEvents }): Promise<FleetBus> {
    // Loaded here, not at the top: only a relay given --nats needs the client.
    const { connect } = await import("@nats-io/transport-node");
    const parsed = new URL(url);
    const nc = await connect({
      servers: `${parsed.protocol === "tls:" ? "tls" : "nats"}://${parsed.host}`,
      ...(parsed.username ? (parsed.password ? { user: decodeURIComponent(parsed.username), pass: decodeURIComponent(parsed.password) } : { token: decodeURIComponent(parsed.username) }) : {}),
      ...(parsed.protocol === "tls:" ? { tls: {} } : {}),
      name: options.name,
      timeout: 5000,
      reconnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      reconnectJitter: 250,
      pingInterval: 2000,
      maxPingOut: 2,
    });
    const bus = new FleetBus(nc, options.log);
    void bus.follow(options.events);
    return bus;
  }

  /** Whether the connection is up now. */
  get connected(): boolean {
    return this.up && !this.nc.isClosed();
  }

  /** The largest message the NATS server takes (its `max_payload`, 1 MiB by default). */
  get maxPayload(): number {
    return this.nc.info?.max_payload ?? 1024 * 1024;
  }

  /** Sends a message; false when it could not be (not connected, or larger than the server takes). */
  publish(subject: string, message: unknown): boolean {
    if (!this.connected) return false;
    try {
      this.nc.publish(subject, this.encoder.encode(JSON.stringify(message)));
      return true;
    } catch (err) {
      this.log.warn("a message for another relay could not be sent", { subject, error: String(err) });
      return false;
    }
  }

  /**
   * Calls `handler` with every message on `subject` (wildcards allowed), decoded, with its subject and a way to
   * answer it; a message that is not JSON is dropped, and a handler that throws does not end the client's
   * reading of the connection.
   */
  private listen(subject: string, handler: (message: unknown, subject: string, answer: (reply: unknown) => void) => void): void {
    const sub = this.nc.subscribe(subject, {
      callback: (err, msg) => {
        if (err) return;
        let message: unknown;
        try {
          message = JSON.parse(this.decoder.decode(msg.data));
        } catch {
          return;
        }
        try {
          handler(message, msg.subject, (reply) => msg.respond(this.encoder.encode(JSON.stringify(reply))));
        } catch (e) {
          this.log.warn("a message from another relay could not be handled", { subject: msg.subject, error: String(e) });
        }
      },
    });
    this.subscriptions.push(sub);
  }

  /** Calls `handler` with every message on `subject` (wildcards allowed). */
  subscribe(subject: string, handler: BusHandler): void {
    this.listen(subject, (message, on) => handler(message, on));
  }

  /** Sends a message and waits for its one answer (decoded), up to `timeoutMs`; rejects without one. */
  async request(subject: string, message: unknown, timeoutMs: number): Promise<unknown> {
    const reply = await this.nc.request(subject, this.encoder.encode(JSON.stringify(message)), { timeout: timeoutMs });
    return JSON.parse(this.decoder.decode(reply.data)) as unknown;
  }

  /**
   * Answers every request on `subject` with what `handler` resolves to (an error becomes `{error}`); one it
   * resolves to undefined is left for another relay to answer.
   */
  respond(subject: string, handler: (message: unknown) => Promise<unknown>): void {
    this.listen(subject, (message, _on, answer) => {
      handler(message).then(
        (reply) => void (reply !== undefined && answer(reply)),
        (e: unknown) => answer({ error: String(e) }),
      );
    });
  }

  /** Resolves once the server has every message published before (a round trip). */
  flush(): Promise<void> {
    return this.nc.flush();
  }

  async close(): Promise<void> {
    this.up = false;
    await this.nc.drain().catch(() => this.nc.close());
  }

  private async follow(events: BusEvents): Promise<void> {
    for await (const s of this.nc.status()) {
      if (s.type === "disconnect") {
        this.up = false;
        this.log.warn("lost the connection to NATS: requests for machines linked to other relays fail until it is back");
        events.disconnected();
      } else if (s.type === "reconnect") {
        this.up = true;
        this.log.info("connected to NATS again");
        events.reconnected();
      }
    }
  }
}
