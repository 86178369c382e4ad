import { setTimeout as sleep } from "node:timers/promises";
import type { AgentToRelay, LinkDialer, LinkEnd, Logger, RelayToAgent } from "../../proto/index.js";
import { Backoff } from "../flow/index.js";

/** The agent's hello on a new link. */
export type Hello = Extract<AgentToRelay, { type: "hello" }>;
/**
 * Link states: `connecting` (dialing, hello sent) → `online` (welcomed) →
 * `waiting` (backing off after a loss) → `connecting` …; `stopped` is final.
 */
export type LinkState = "idle" | "connecting" | "online" | "waiting" | "stopped";

/** Options of {@link LinkClient}. */
export interface LinkClientOptions {
  /** Opens a link to the relay: over gRPC ({@link GrpcDialer}), or in this process (`makina up`). */
  dial: LinkDialer;
  /** Builds the hello sent on every new link. */
  hello: () => Hello;
  /** Every relay message after the welcome. */
  onMessage: (message: RelayToAgent) => void;
  /** Called when a link is lost (after being welcomed or not). */
  onDisconnect: () => void;
  /** Called once the relay welcomed a new link. */
  onOnline?: () => void;
  /** A message sent along with every heartbeat (the runtimes' metrics), if any. */
  withHeartbeat?: () => AgentToRelay | undefined;
  backoff: Backoff;
  /**
   * A link the relay has not answered within this long is given up (and the next attempt made). Each attempt
   * given up that way doubles the wait of the next, up to `reachedWelcomeTimeoutMs`: relays too busy to answer
   * thousands of machines at once are not asked again and again. @default 15000
   */
  welcomeTimeoutMs?: number;
  /**
   * A link the relay answered (it took the call) but has not welcomed within this long is given up: a relay
   * busy with thousands of machines linking at once is waited for, rather than left for another just as busy.
   * @default 60000
   */
  reachedWelcomeTimeoutMs?: number;
  log: Logger;
}

/**
 * The agent's side of the link: dials the relay, keeps one `Connect` stream
 * open, sends heartbeats, and reconnects with capped exponential backoff and
 * jitter whenever the link is lost.
 */
export class LinkClient {
  private relay: LinkEnd<AgentToRelay> | undefined;
  private readonly stopController = new AbortController();
  private loop: Promise<void> | undefined;
  state: LinkState = "idle";
  /** Why the last link attempt failed, for `doctor`. */
  lastError: string | null = null;
  /** Unix ms when the current link was welcomed. */
  onlineSince: number | null = null;
  /** True when the relay refused this machine's credentials on the last attempt. */
  credentialsRejected = false;
  private readonly onlineWaiters = new Set<() => void>();
  /** Attempts in a row given up because the relay did not answer in time. */
  private unanswered = 0;

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
  send(message: AgentToRelay): void {
    if (this.state === "online") this.relay?.send(message);
  }

  private async run(): Promise<void> {
    const { log } = this.options;
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
      let heartbeat: NodeJS.Timeout | undefined;
      let ended = false;
      const patience = Math.min(this.options.reachedWelcomeTimeoutMs ?? 60_000, (this.options.welcomeTimeoutMs ?? 15_000) * 2 ** Math.min(this.unanswered, 16));
      // A wait is judged only once the I/O that came meanwhile was read: after a stall (thousands of links at
      // once), the relay's answer may be waiting in the socket when the timer fires, and timers run first.
      const afterIo = (ms: number, fn: () => void) => setTimeout(() => setImmediate(fn), ms);
      let answered = false;
      let welcomed = false;
      let welcomeTimer = afterIo(patience, () => {
        if (ended || answered || welcomed) return;
        this.unanswered++;
        end("the relay did not answer the link in time");
      });
      const end = (reason: string) => {
        if (ended) return;
        ended = true;
        clearTimeout(welcomeTimer);
        clearInterval(heartbeat);
        this.stopController.signal.removeEventListener("abort", onStop);
        this.onlineSince = null;
        this.relay = undefined;
        this.lastError = reason;
        relay.close(reason);
        resolve();
      };
      const onStop = () => end("stopped");
      this.stopController.signal.addEventListener("abort", onStop, { once: true });
      const relay: LinkEnd<AgentToRelay> = this.options.dial({
        send: (message) => {
          if (ended) return;
          if (message.type === "welcome") {
            welcomed = true;
            clearTimeout(welcomeTimer);
            this.state = "online";
            this.lastError = null;
            this.onlineSince = Date.now();
            this.credentialsRejected = false;
            this.unanswered = 0;
            this.options.backoff.reset();
            log.info("link online", { machineId: message.machineId });
            const interval = Math.max(100, message.heartbeatIntervalMs);
            heartbeat = setInterval(() => {
              relay.send({ type: "heartbeat", sentAtMs: Date.now() });
              const extra = this.options.withHeartbeat?.();
              if (extra) relay.send(extra);
            }, interval);
            for (const w of this.onlineWaiters) w();
            this.onlineWaiters.clear();
            this.options.onOnline?.();
            return;
          }
          this.options.onMessage(message);
        },
        reached: () => {
          if (ended || welcomed) return;
          clearTimeout(welcomeTimer);
          answered = true;
          welcomeTimer = afterIo(this.options.reachedWelcomeTimeoutMs ?? 60_000, () => welcomed || end("the relay took the link but did not welcome it in time"));
        },
        close: (reason, refused) => {
          if (ended) return;
          this.credentialsRejected = refused === "credentials";
          if (refused === "credentials") log.error("the relay rejected this machine's credentials", { details: reason });
          else if (!this.stopController.signal.aborted) log.warn("link error", { reason });
          end(reason);
        },
      });
      this.relay = relay;
      relay.send(this.options.hello());
    });
  }

  /** Closes the link and stops reconnecting. Idempotent. */
  async stop(): Promise<void> {
    this.stopController.abort();
    await this.loop;
    this.state = "stopped";
  }
}
