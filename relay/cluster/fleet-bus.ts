import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { WarningThrottle, type Logger } from "../../proto/index.js";
import { BUS_DROPS, BusSeal, type BusDrop } from "./bus-seal.js";
import { addresseeOf } from "./hop-messages.js";

/** What a subscriber gets: the message decoded, the subject it came on, and the relay that sent it (authenticated). */
export type BusHandler = (message: unknown, subject: string, sender: string) => void;

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
 *
 * Every message is sealed ({@link BusSeal}): only the relays, which share a secret, can send one another
 * anything, and each knows which relay sent what it reads. What does not open is dropped, counted by why
 * ({@link dropped}), and said in the log once a minute at most per reason.
 */
export class FleetBus {
  private up = true;
  private readonly subscriptions: Subscription[] = [];
  private readonly drops = Object.fromEntries(BUS_DROPS.map((d) => [d, 0])) as Record<BusDrop, number>;
  private readonly warnings = new WarningThrottle();
  /** Requests waiting for their answer: closing the bus ends them. */
  private readonly waiting = new Set<(err: Error) => void>();

  private constructor(
    private readonly nc: NatsConnection,
    private readonly seal: BusSeal,
    private readonly log: Logger,
  ) {}

  /**
   * Connects (waiting up to 5 s for the first connection) and follows the connection's state. `secret`: the
   * relays' shared secret, which seals their messages; `relayId`: this relay, as its messages say.
   */
  static async connect(url: string, options: { name: string; relayId: string; secret: string; credsFile?: string | null; log: Logger; events: BusEvents }): Promise<FleetBus> {
    // Loaded here, not at the top: only a relay given --nats needs the client.
    const { connect, credsAuthenticator } = await import("@nats-io/transport-node");
    const parsed = new URL(url);
    // NATS's own credentials: a user and password, or a token, in the URL; a credentials file (JWT and NKey seed).
    const creds = options.credsFile ? await readFile(options.credsFile) : undefined;
    const nc = await connect({
      ...(creds ? { authenticator: credsAuthenticator(new Uint8Array(creds)) } : {}),
      servers: `${parsed.protocol === "tls:" ? "tls" : "nats"}://${parsed.host}`,
      ...(parsed.username ? (parsed.password ? { user: decodeURIComponent(parsed.username), pass: decodeURIComponent(parsed.password) } : { token: decodeURIComponent(parsed.username) }) : {}),
      ...(parsed.protocol === "tls:" ? { tls: {} } : {}),
      // A server joined without TLS or credentials (on loopback, or with --nats-insecure) is the only one used:
      // the cluster's other servers it names are not dialed (plaintext, beyond what was checked).
      ...(parsed.protocol !== "tls:" && !parsed.username && !creds ? { ignoreClusterUpdates: true } : {}),
      name: options.name,
      timeout: 5000,
      reconnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      reconnectJitter: 250,
      pingInterval: 2000,
      maxPingOut: 2,
    });
    const bus = new FleetBus(nc, new BusSeal(options.secret, options.relayId), options.log);
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

  /** Messages dropped so far, by why. */
  dropped(): Readonly<Record<BusDrop, number>> {
    return this.drops;
  }

  /**
   * Counts a message dropped (by the bus, or by a handler: one authenticated but speaking for another relay),
   * and says so in the log at most once a minute per reason, with how many since.
   */
  drop(why: BusDrop, subject: string): void {
    this.drops[why]++;
    this.warnings.warn(why, this.log, "dropped a message on the relays' bus", { why, subject: subject.slice(0, 128) });
  }

  /** Sends a message; false when it could not be (not connected, or larger than the server takes). */
  publish(subject: string, message: unknown): boolean {
    if (!this.connected) return false;
    try {
      this.nc.publish(subject, this.seal.seal(subject, message, addresseeOf(subject)));
      return true;
    } catch (err) {
      this.warnings.warn("not sent", this.log, "a message for another relay could not be sent", { subject: subject.slice(0, 128), error: String(err) });
      return false;
    }
  }

  /**
   * Calls `handler` with every message on `subject` (wildcards allowed) that opens, with its subject, its sender
   * and a way to answer it; one that does not open is dropped, and a handler that throws does not end the
   * client's reading of the connection.
   */
  private listen(subject: string, handler: (message: unknown, subject: string, sender: string, answer: (reply: unknown) => void) => void): void {
    const sub = this.nc.subscribe(subject, {
      callback: (err, msg) => {
        if (err) return;
        const opened = this.seal.open(msg.subject, msg.data);
        if (typeof opened === "string") return this.drop(opened, msg.subject);
        try {
          handler(opened.body, msg.subject, opened.sender, (reply) => msg.reply && msg.respond(this.seal.seal(msg.reply, reply, opened.sender)));
        } catch (e) {
          this.log.warn("a message from another relay could not be handled", { subject: msg.subject, error: String(e) });
        }
      },
    });
    this.subscriptions.push(sub);
  }

  /** Calls `handler` with every message on `subject` (wildcards allowed). */
  subscribe(subject: string, handler: BusHandler): void {
    this.listen(subject, (message, on, sender) => handler(message, on, sender));
  }

  /**
   * Sends a message and waits for its answer (decoded), up to `timeoutMs`; rejects without one. The answer comes
   * to an inbox of this call's own: what does not open there, or comes from another relay than `from` (when
   * given), is dropped and the wait goes on (a client on the bus sees the inbox's name, and could otherwise
   * answer first).
   */
  request(subject: string, message: unknown, timeoutMs: number, from?: string): Promise<unknown> {
    const inbox = `_INBOX.${randomBytes(16).toString("hex")}`;
    return new Promise((resolve, reject) => {
      const end = (err: Error | undefined, body?: unknown) => {
        clearTimeout(timer);
        this.waiting.delete(fail);
        sub.unsubscribe();
        if (err) reject(err);
        else resolve(body);
      };
      const fail = (err: Error) => end(err);
      const sub = this.nc.subscribe(inbox, {
        callback: (err, msg) => {
          if (err) return;
          // The server's "no responders" (an empty 503): not taken as an answer (anyone could send one), nor as an
          // attack; the wait goes on.
          if (msg.data.length === 0 && msg.headers?.code === 503) return;
          const opened = this.seal.open(msg.subject, msg.data);
          if (typeof opened === "string") return this.drop(opened, msg.subject);
          if (from !== undefined && opened.sender !== from) return this.drop("impersonating", msg.subject);
          end(undefined, opened.body);
        },
      });
      const timer = setTimeout(() => end(new Error(`no answer on the relays' bus within ${timeoutMs} ms`)), timeoutMs);
      this.waiting.add(fail);
      try {
        this.nc.publish(subject, this.seal.seal(subject, message, addresseeOf(subject)), { reply: inbox });
      } catch (err) {
        end(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  /**
   * Answers every request on `subject` with what `handler` resolves to (an error becomes `{error}`); one it
   * resolves to undefined is left for another relay to answer. The handler is told which relay asks.
   */
  respond(subject: string, handler: (message: unknown, sender: string) => Promise<unknown>): void {
    this.listen(subject, (message, _on, sender, answer) => {
      handler(message, sender).then(
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
    for (const fail of [...this.waiting]) fail(new Error("the relay is stopping: its connection to NATS closed"));
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
