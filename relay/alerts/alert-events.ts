import type { ALERT_EVENTS } from "../admin-contract/alerts.js";

export { ALERT_EVENTS } from "../admin-contract/alerts.js";
export type AlertEventType = (typeof ALERT_EVENTS)[number];

/**
 * One event, as every relay that sees it names it: its `id` is made of what it is about (the machine and when it
 * went offline, the budget and its period and threshold), so relays that see it queue it once between them.
 */
export interface AlertEvent {
  id: string;
  /** An event type, or `alert.test` (a webhook's test, sent to it alone). */
  type: AlertEventType | "alert.test";
  orgId: string;
  /** What it is about, as the JSON body's `data`. */
  data: Record<string, unknown>;
  /** One line for people (the body's `text`, which a Slack incoming webhook shows as the message). */
  text: string;
}

/**
 * The JSON a webhook is sent: `{type, timestamp, data}` as Standard Webhooks payloads are, the event's `id`,
 * and `text` for Slack-compatible receivers.
 */
export function alertBody(event: AlertEvent, now: number): string {
  return JSON.stringify({ type: event.type, id: event.id, timestamp: new Date(now).toISOString(), org_id: event.orgId, data: event.data, text: event.text });
}
