import type { Logger } from "../../proto/index.js";
import type { AlertDelivery, AlertStore, AlertWebhook } from "../store/index.js";
import type { SecretShelf } from "../vault/index.js";
import { alertBody, type AlertEvent } from "./alert-events.js";
import { postWebhook, type WebhookReach } from "./webhook-post.js";
import { signWebhook } from "./webhook-signature.js";

/** Where webhooks' signing secrets are kept (sealed with the relay's secrets key), by webhook id. */
export type AlertSecrets = Pick<SecretShelf, "make" | "read" | "forget">;

/**
 * The waits before each try again, in multiples of the first (5 s by default: 5 s, 5 min, 30 min, 2 h, 5 h,
 * 10 h, 10 h, as Standard Webhooks suggests): over a day of tries, then the delivery has failed.
 */
const RETRY_STEPS = [1, 60, 360, 1440, 3600, 7200, 7200];

/** How long a relay holds a delivery it took to send (another relay takes it after, should this one die). */
const LEASE_MS = 60_000;

export interface AlertSenderOptions {
  store: AlertStore;
  secrets: AlertSecrets;
  log: Logger;
  reach: WebhookReach;
  /** The first wait before a try again, ms. @default 5000 */
  firstRetryMs?: number;
  /** How long a receiver may take to answer, ms. @default 10000 */
  timeoutMs?: number;
  now?: () => number;
}

/**
 * Queues an organization's events for the webhooks that want them, and sends what is due: each delivery signed
 * (`webhook-id`, `webhook-timestamp`, `webhook-signature`, Standard Webhooks), a 2xx answer delivering it,
 * anything else trying again later, for a day. Deliveries are in the database: whichever relay is up sends
 * them, one relay each try.
 */
export class AlertSender {
  private timer: NodeJS.Timeout | undefined;
  private sending: Promise<void> | undefined;
  private stopped = false;
  private readonly now: () => number;
  private readonly firstRetryMs: number;

  constructor(private readonly o: AlertSenderOptions) {
    this.now = o.now ?? Date.now;
    this.firstRetryMs = o.firstRetryMs ?? 5000;
  }

  /** Queues `event` for the organization's webhooks that want it (or for `only`, a test), then sends. */
  async emit(event: AlertEvent, only?: AlertWebhook): Promise<number> {
    const webhooks = only ? [only] : (await this.o.store.list(event.orgId)).filter((w) => w.events.includes(event.type));
    let queued = 0;
    const body = alertBody(event, this.now());
    for (const w of webhooks) if (await this.o.store.enqueue(w, { id: event.id, type: event.type, body }, this.now())) queued++;
    if (queued) this.kick();
    return queued;
  }

  /** Looks for due deliveries every `everyMs` (and at once after an event). */
  start(everyMs = 1000): void {
    const tick = () => {
      this.kick();
      if (!this.stopped) this.timer = setTimeout(tick, Math.min(everyMs, this.firstRetryMs)).unref();
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.sending;
  }

  /** Sends what is due, unless a round is under way. */
  kick(): void {
    if (this.sending || this.stopped) return;
    this.sending = this.round()
      .catch((err: unknown) => this.o.log.warn("alert deliveries could not be read", { error: String(err) }))
      .finally(() => (this.sending = undefined));
  }

  private async round(): Promise<void> {
    for (;;) {
      const due = await this.o.store.claimDue(20, LEASE_MS, this.now());
      if (due.length === 0) return;
      await Promise.all(due.map((d) => this.send(d)));
    }
  }

  private async send(d: AlertDelivery): Promise<void> {
    const webhook = await this.o.store.get(d.webhookId);
    const secret = webhook && (await this.o.secrets.read(webhook.id));
    if (!webhook || !secret) return this.o.store.tried(d.id, { ok: false, status: null, error: "the webhook was deleted", retryAt: null }, this.now());
    const timestamp = Math.floor(this.now() / 1000);
    const headers = { "webhook-id": d.id, "webhook-timestamp": String(timestamp), "webhook-signature": signWebhook(secret, d.id, timestamp, d.body) };
    let status: number | null = null;
    let error: string | null = null;
    try {
      status = await postWebhook(webhook.url, d.body, headers, this.o.reach, this.o.timeoutMs ?? 10_000);
      if (status < 200 || status > 299) error = status >= 300 && status < 400 ? `answered ${status}: redirects are not followed` : `answered ${status}`;
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
    }
    const ok = error === null;
    const step = RETRY_STEPS[d.attempts - 1];
    const retryAt = ok || step === undefined ? null : this.now() + step * this.firstRetryMs;
    if (!ok) this.o.log.info("an alert was not delivered", { webhookId: webhook.id, deliveryId: d.id, attempt: d.attempts, error, retryAt });
    await this.o.store.tried(d.id, { ok, status, error: error?.slice(0, 500) ?? null, retryAt }, this.now());
  }
}
