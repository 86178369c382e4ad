import type { Updateable } from "kysely";
import { newId } from "../ids/index.js";
import type { Db } from "./open-database.js";
import type { Row, Tables } from "./tables.js";

/** Where an organization's alerts go. Its signing secret is not here: it is sealed in the settings. */
export interface AlertWebhook {
  id: string;
  orgId: string;
  name: string | null;
  url: string;
  /** The events it wants (`machine.offline`, `runtime.failed`, …). */
  events: string[];
  /** A machine offline this long (seconds) is an event. */
  machineOfflineAfterS: number;
  /** Requests failing at this rate (percent) over 5 minutes is an event. */
  errorRatePercent: number;
  createdAt: number;
  createdBy: string | null;
}

/** One event to one webhook, and how its sending went. */
export interface AlertDelivery {
  id: string;
  webhookId: string;
  orgId: string;
  eventId: string;
  eventType: string;
  /** The JSON sent (the same bytes on every try). */
  body: string;
  state: "pending" | "delivered" | "failed";
  attempts: number;
  /** When it is sent next (pending). */
  nextAt: number;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: number;
  deliveredAt: number | null;
}

const toWebhook = (r: Row<"alert_webhooks">): AlertWebhook => ({
  id: r.id,
  orgId: r.org_id,
  name: r.name,
  url: r.url,
  events: JSON.parse(r.events_json) as string[],
  machineOfflineAfterS: r.machine_offline_after_s,
  errorRatePercent: r.error_rate_percent,
  createdAt: Number(r.created_at),
  createdBy: r.created_by,
});

const toDelivery = (r: Row<"alert_deliveries">): AlertDelivery => ({
  id: r.id,
  webhookId: r.webhook_id,
  orgId: r.org_id,
  eventId: r.event_id,
  eventType: r.event_type,
  body: r.body,
  state: r.state,
  attempts: r.attempts,
  nextAt: Number(r.next_at),
  lastStatus: r.last_status,
  lastError: r.last_error,
  createdAt: Number(r.created_at),
  deliveredAt: r.delivered_at === null ? null : Number(r.delivered_at),
});

/** What a webhook is made with, or changed by. */
export type AlertWebhookFields = Pick<AlertWebhook, "name" | "url" | "events" | "machineOfflineAfterS" | "errorRatePercent">;

/**
 * Alert webhooks and their deliveries. A delivery is queued once per webhook and event id (relays that see the
 * same event queue it once between them), and sent by whichever relay claims it first (a lease, taken by a
 * conditional update, so two relays never send one try twice).
 */
export class AlertStore {
  constructor(private readonly db: Db) {}

  async create(orgId: string, fields: AlertWebhookFields, createdBy: string | null, now = Date.now()): Promise<AlertWebhook> {
    const id = newId("alert");
    await this.db
      .insertInto("alert_webhooks")
      .values({ id, org_id: orgId, name: fields.name, url: fields.url, events_json: JSON.stringify(fields.events), machine_offline_after_s: fields.machineOfflineAfterS, error_rate_percent: fields.errorRatePercent, created_at: now, created_by: createdBy })
      .execute();
    return (await this.get(id))!;
  }

  async get(id: string): Promise<AlertWebhook | undefined> {
    const row = await this.db.selectFrom("alert_webhooks").selectAll().where("id", "=", id).executeTakeFirst();
    return row && toWebhook(row);
  }

  /** An organization's webhooks, oldest first; every organization's with null. */
  async list(orgId: string | null): Promise<AlertWebhook[]> {
    let q = this.db.selectFrom("alert_webhooks").selectAll().orderBy("created_at").orderBy("id");
    if (orgId !== null) q = q.where("org_id", "=", orgId);
    return (await q.execute()).map(toWebhook);
  }

  async update(id: string, changes: Partial<AlertWebhookFields>): Promise<AlertWebhook | undefined> {
    const set: Updateable<Tables["alert_webhooks"]> = {};
    if (changes.name !== undefined) set.name = changes.name;
    if (changes.url !== undefined) set.url = changes.url;
    if (changes.events !== undefined) set.events_json = JSON.stringify(changes.events);
    if (changes.machineOfflineAfterS !== undefined) set.machine_offline_after_s = changes.machineOfflineAfterS;
    if (changes.errorRatePercent !== undefined) set.error_rate_percent = changes.errorRatePercent;
    if (Object.keys(set).length) await this.db.updateTable("alert_webhooks").set(set).where("id", "=", id).execute();
    return this.get(id);
  }

  /** Deletes a webhook and its deliveries. */
  async delete(id: string): Promise<void> {
    await this.db.deleteFrom("alert_deliveries").where("webhook_id", "=", id).execute();
    await this.db.deleteFrom("alert_webhooks").where("id", "=", id).execute();
  }

  /** Queues an event for a webhook; false when it was queued before (by this relay or another). */
  async enqueue(webhook: AlertWebhook, event: { id: string; type: string; body: string }, now = Date.now()): Promise<boolean> {
    const res = await this.db
      .insertInto("alert_deliveries")
      .values({ id: newId("msg"), webhook_id: webhook.id, org_id: webhook.orgId, event_id: event.id, event_type: event.type, body: event.body, state: "pending", attempts: 0, next_at: now, lease_until: 0, created_at: now })
      .onConflict((oc) => oc.columns(["webhook_id", "event_id"]).doNothing())
      .executeTakeFirst();
    return Number(res.numInsertedOrUpdatedRows ?? 0) === 1;
  }

  /** Takes up to `limit` deliveries that are due, for `leaseMs`: each is this relay's to send until then. */
  async claimDue(limit: number, leaseMs: number, now = Date.now()): Promise<AlertDelivery[]> {
    const due = await this.db.selectFrom("alert_deliveries").select("id").where("state", "=", "pending").where("next_at", "<=", now).where("lease_until", "<", now).orderBy("next_at").limit(limit).execute();
    const claimed: AlertDelivery[] = [];
    for (const { id } of due) {
      const res = await this.db
        .updateTable("alert_deliveries")
        .set((eb) => ({ lease_until: now + leaseMs, attempts: eb("attempts", "+", 1) }))
        .where("id", "=", id)
        .where("state", "=", "pending")
        .where("lease_until", "<", now)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) continue;
      const row = await this.db.selectFrom("alert_deliveries").selectAll().where("id", "=", id).executeTakeFirst();
      if (row) claimed.push(toDelivery(row));
    }
    return claimed;
  }

  /** What a try came to: delivered, tried again at `retryAt`, or failed for good (`retryAt` null). */
  async tried(id: string, outcome: { ok: boolean; status: number | null; error: string | null; retryAt: number | null }, now = Date.now()): Promise<void> {
    const state = outcome.ok ? "delivered" : outcome.retryAt === null ? "failed" : "pending";
    await this.db
      .updateTable("alert_deliveries")
      .set({ state, last_status: outcome.status, last_error: outcome.error, lease_until: 0, next_at: outcome.retryAt ?? now, delivered_at: outcome.ok ? now : null })
      .where("id", "=", id)
      .execute();
  }

  /** A webhook's deliveries, newest first. */
  async deliveries(webhookId: string, limit: number, offset: number): Promise<{ deliveries: AlertDelivery[]; total: number }> {
    const base = this.db.selectFrom("alert_deliveries").where("webhook_id", "=", webhookId);
    const rows = await base.selectAll().orderBy("created_at", "desc").orderBy("id", "desc").limit(limit).offset(offset).execute();
    const count = await base.select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirst();
    return { deliveries: rows.map(toDelivery), total: Number(count?.n ?? 0) };
  }

  /** Forgets deliveries made before `before` that are done (delivered or failed). */
  async prune(before: number): Promise<void> {
    await this.db.deleteFrom("alert_deliveries").where("created_at", "<", before).where("state", "!=", "pending").execute();
  }
}
