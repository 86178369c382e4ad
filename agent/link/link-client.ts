import { credentials, Metadata, status, type ClientDuplexStream, type ServiceError } from "@grpc/grpc-js";
import { setTimeout as sleep } from "node:timers/promises";
import {
  AgentLinkClient,
  AUTHORIZATION_METADATA,
  MACHINE_ID_METADATA,
  type AgentMessage,
  type Hello,
  type Logger,
  type RelayMessage,
  type Welcome,
} from "../../proto/index.js";
import { Backoff } from "./backoff.js";

/**
 * Link states: `connecting` (dialing, hello sent) → `online` (welcomed) →
 * `waiting` (backing off after a loss) → `connecting` …; `stopped` is final.
 */
export type LinkState = "idle" | "connecting" | "online" | "waiting" | "stopped";

/** Options of {@link LinkClient}. */
export interface LinkClientOptions {
  server: string;
  machineId: string;
  token: string;
  /** Builds the hello sent on every new link. */
  hello: () => Hello;
  /** Every relay message after the welcome. */
  onMessage: (message: RelayMessage) => void;
  /** Called when a link is lost (after being welcomed or not). */
  onDisconnect: () => void;
  /** Called once the relay welcomed a new link. */
  onOnline?: () => void;
  /** Inference requests in flight, for heartbeats. */
  inFlight: () => number;
  backoff: Backoff;
  log: Logger;
}

/**
 * The agent's side of the link: dials the relay, keeps one `Connect` stream
 * open, sends heartbeats, and reconnects with capped exponential backoff and
 * jitter whenever the link is lost.
 */
export class LinkClient {
  private client: AgentLinkClient | undefined;
  private call: ClientDuplexStream<AgentMessage, RelayMessage> | undefined;
  private readonly stopController = new AbortController();
  private loop: Promise<void> | undefined;
  state: LinkState = "idle";
  /** Why the last link attempt failed, for `doctor`. */
  lastError: string | null = null;
  /** The relay's welcome on the current link. */
  welcome: Welcome | null = null;
  /** Unix ms when the current link was welcomed. */
  onlineSince: number | null = null;
  /** True when the relay refused this machine's credentials on the last attempt. */
  credentialsRejected = false;
  private readonly onlineWaiters = new Set<() => void>();

  constructor(private readonly options: LinkClientOptions) {}

  start(): void {
    this.loop ??= this.run();
  }

  /** Resolves once the link is welcomed (at once when it already is). */
  whenOnline(): Promise<void> {
    if (this.state === "online") return Promise.resolve();
    return new Promise((resolve) => this.onlineWaiters.add(resolve));
  }

  /** Sends a message on the current link; dropped when there is none (the relay fails what was pending). */
  send(message: AgentMessage): void {
    if (this.state === "online") this.call?.write(message);
  }

  private async run(): Promise<void> {
    const { log } = this.options;
    this.client = new AgentLinkClient(this.options.server, credentials.createInsecure(), {
      "grpc.keepalive_time_ms": 10_000,
      "grpc.keepalive_timeout_ms": 5_000,
      "grpc.keepalive_permit_without_calls": 1,
      "grpc.max_receive_message_length": 64 * 1024 * 1024,
      "grpc.initial_reconnect_backoff_ms": 250,
    });
    while (!this.stopController.signal.aborted) {
      this.state = "connecting";
      await this.session();
      this.options.onDisconnect();
      if (this.stopController.signal.aborted) break;
      const delay = this.options.backoff.next();
      this.state = "waiting";
      log.info("link lost, reconnecting", { inMs: delay, reason: this.lastError });
      await sleep(delay, undefined, { signal: this.stopController.signal }).catch(() => {});
    }
    this.state = "stopped";
  }

  /** One link, from dial to loss. Resolves when it ends, never rejects. */
  private session(): Promise<void> {
    const { log } = this.options;
    return new Promise<void>((resolve) => {
      const metadata = new Metadata();
      metadata.set(MACHINE_ID_METADATA, this.options.machineId);
      metadata.set(AUTHORIZATION_METADATA, `Bearer ${this.options.token}`);
      const call = this.client!.connect(metadata);
      this.call = call;
      let heartbeat: NodeJS.Timeout | undefined;
      let ended = false;
      const end = (reason: string) => {
        if (ended) return;
        ended = true;
        clearInterval(heartbeat);
        this.stopController.signal.removeEventListener("abort", onStop);
        this.welcome = null;
        this.onlineSince = null;
        this.call = undefined;
        this.lastError = reason;
        call.cancel();
        resolve();
      };
      const onStop = () => end("stopped");
      this.stopController.signal.addEventListener("abort", onStop, { once: true });

      call.on("data", (message: RelayMessage) => {
        if (message.body?.$case === "welcome") {
          this.welcome = message.body.value;
          this.state = "online";
          this.lastError = null;
          this.onlineSince = Date.now();
          this.credentialsRejected = false;
          this.options.backoff.reset();
          log.info("link online", { machineId: message.body.value.machineId });
          const interval = Math.max(100, message.body.value.heartbeatIntervalMs);
          heartbeat = setInterval(() => {
            call.write({ body: { $case: "heartbeat", value: { sentAtMs: Date.now(), inFlight: this.options.inFlight() } } });
          }, interval);
          for (const w of this.onlineWaiters) w();
          this.onlineWaiters.clear();
          this.options.onOnline?.();
          return;
        }
        if (message.body?.$case === "heartbeat") return;
        this.options.onMessage(message);
      });
      call.on("error", (err: ServiceError) => {
        this.credentialsRejected = err.code === status.UNAUTHENTICATED;
        if (err.code === status.UNAUTHENTICATED) log.error("the relay rejected this machine's credentials", { details: err.details });
        else if (err.code !== status.CANCELLED) log.warn("link error", { code: err.code, details: err.details });
        end(`${status[err.code] ?? err.code}: ${err.details}`);
      });
      call.on("end", () => end("the relay closed the link"));
      call.write({ body: { $case: "hello", value: this.options.hello() } });
    });
  }

  /** Closes the link and stops reconnecting. Idempotent. */
  async stop(): Promise<void> {
    this.stopController.abort();
    await this.loop;
    this.client?.close();
    this.state = "stopped";
  }
}
