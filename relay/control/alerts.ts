import { MakinaError } from "../../proto/index.js";
import type { Actor } from "../auth/index.js";
import { ALERT_EVENTS, newWebhookSecret, webhookUrlProblem, type AlertSender, type AlertSecrets, type WebhookReach } from "../alerts/index.js";
import type { AlertDelivery, AlertWebhook, AlertWebhookFields } from "../store/index.js";
import { given, type ControlContext, type Given } from "./control-context.js";

/** What the control plane sends alerts with (absent: a relay that sends none, such as a test's control plane alone). */
export interface AlertDeps {
  sender: AlertSender;
  secrets: AlertSecrets;
  reach: WebhookReach;
}

/** A webhook's URL as recorded: its origin only (receivers such as Slack keep their token in the path or the query). */
export const shownUrl = (url: string) => {
  try {
    return `${new URL(url).origin}/…`;
  } catch {
    return "(not a URL)";
  }
};

const target = (w: AlertWebhook) => ({ kind: "alert", id: w.id, name: w.name ?? shownUrl(w.url) });

/**
 * An organization's alert webhooks: its admins add, change, test and remove them and read their deliveries.
 * A webhook's secret is answered once, when it is made.
 */
export class Alerts {
  constructor(private readonly c: ControlContext) {}

  private deps(): AlertDeps {
    const a = this.c.deps.alerts;
    if (!a) throw new MakinaError("unsupported_endpoint", "This relay sends no alerts.");
    return a;
  }

  async list(actor: Actor, orgRef: string | null | undefined): Promise<AlertWebhook[]> {
    const policy = this.c.policy(actor);
    policy.requireAdmin("read the organization's alerts");
    return this.c.store.alerts.list(policy.org(orgRef).id);
  }

  async create(actor: Actor, orgRef: string | null | undefined, asked: Given<AlertWebhookFields>): Promise<{ webhook: AlertWebhook; secret: string }> {
    const policy = this.c.policy(actor);
    policy.requireAdmin("add alerts");
    const org = policy.org(orgRef);
    const fields = given(asked);
    this.check(fields);
    const webhook = await this.c.store.alerts.create(org.id, fields, policy.userId);
    const secret = await this.deps().secrets.make(webhook.id, newWebhookSecret);
    await this.c.record(actor, { orgId: org.id, action: "alert.created", target: target(webhook), detail: { url: shownUrl(webhook.url), events: webhook.events } });
    return { webhook, secret };
  }

  async update(actor: Actor, id: string, asked: Given<Partial<AlertWebhookFields>>): Promise<AlertWebhook> {
    const webhook = await this.find(actor, id);
    const changes = given(asked);
    this.check(changes);
    const updated = (await this.c.store.alerts.update(id, changes))!;
    await this.c.record(actor, { orgId: webhook.orgId, action: "alert.changed", target: target(updated), detail: { url: shownUrl(updated.url), events: updated.events } });
    return updated;
  }

  async delete(actor: Actor, id: string): Promise<void> {
    const webhook = await this.find(actor, id);
    await this.c.store.alerts.delete(id);
    await this.deps().secrets.forget(id);
    await this.c.record(actor, { orgId: webhook.orgId, action: "alert.deleted", target: target(webhook) });
  }

  /** Sends the webhook a test event (`alert.test`), delivered and listed as any other. */
  async test(actor: Actor, id: string): Promise<void> {
    const webhook = await this.find(actor, id);
    const at = Date.now();
    await this.deps().sender.emit({ id: `alert.test:${at}`, type: "alert.test", orgId: webhook.orgId, data: { webhook_id: webhook.id }, text: `Makina: a test of the alert ${webhook.name ?? webhook.id}. Alerts reach you here.` }, webhook);
  }

  async deliveries(actor: Actor, id: string, page: { limit: number; offset: number }): Promise<{ deliveries: AlertDelivery[]; total: number }> {
    await this.find(actor, id);
    return this.c.store.alerts.deliveries(id, page.limit, page.offset);
  }

  private async find(actor: Actor, id: string): Promise<AlertWebhook> {
    const policy = this.c.policy(actor);
    policy.requireAdmin("change the organization's alerts");
    const webhook = await this.c.store.alerts.get(id);
    if (!webhook) throw new MakinaError("not_found", `No alert '${id}'.`, { param: "alert" });
    policy.see(webhook.orgId, "alert", id, "alert");
    return webhook;
  }

  private check(fields: Partial<AlertWebhookFields>): void {
    if (fields.url !== undefined) {
      const problem = webhookUrlProblem(fields.url, this.deps().reach);
      if (problem) throw new MakinaError("invalid_value", `'url' ${problem}.`, { param: "url" });
    }
    const unknown = fields.events?.find((e) => !(ALERT_EVENTS as readonly string[]).includes(e));
    if (unknown !== undefined) throw new MakinaError("invalid_value", `'events' must name events among ${ALERT_EVENTS.join(", ")}, not '${unknown}'.`, { param: "events" });
  }
}
