import { z } from "zod";
import { answer, route } from "./route.js";
import { must, nameText, orgRef } from "./fields.js";
import type { List, Page } from "./list.js";

/** The events a webhook may want. */
export const ALERT_EVENTS = ["budget.threshold", "machine.offline", "runtime.failed", "error_rate", "key.expiring"] as const;
const ALERT_EVENT_NAMES = ALERT_EVENTS;


/** Where an organization's alerts go. Never its secret, which only its creation answers. */
export interface AlertWebhook {
  id: string;
  org_id: string;
  name: string | null;
  url: string;
  events: string[];
  /** A machine offline this many seconds is told. */
  machine_offline_after_s: number;
  /** Requests failing at this rate (percent) over 5 minutes is told. */
  error_rate_percent: number;
  created_at: number;
  created_by: string | null;
}

/** A webhook just made: its signing secret (`whsec_…`) is in this answer only. */
export interface NewAlertWebhook extends AlertWebhook {
  secret: string;
}

/** One event sent to a webhook, and how it went. */
export interface AlertDelivery {
  id: string;
  event_id: string;
  event_type: string;
  /** The JSON sent. */
  body: string;
  state: "pending" | "delivered" | "failed";
  attempts: number;
  /** When it is tried next (pending). */
  next_at: number;
  last_status: number | null;
  last_error: string | null;
  created_at: number;
  delivered_at: number | null;
}

const events = () =>
  z
    .array(z.string(must("an array of event names")), must("an array of event names"))
    .min(1, must(`a non-empty array of events among ${ALERT_EVENT_NAMES.join(", ")}`))
    .max(ALERT_EVENT_NAMES.length, must(`an array of events among ${ALERT_EVENT_NAMES.join(", ")}`));
const url = () => z.string(must("a URL")).min(1, must("a URL")).max(2000, must("a URL of at most 2,000 characters"));
const offlineAfter = () => z.number(must("an integer from 5 to 86400")).int(must("an integer from 5 to 86400")).min(5, must("an integer from 5 to 86400")).max(86_400, must("an integer from 5 to 86400"));
const errorRate = () => z.number(must("an integer from 1 to 100")).int(must("an integer from 1 to 100")).min(1, must("an integer from 1 to 100")).max(100, must("an integer from 1 to 100"));
const PAGE = must("an integer of at least 1");
const PER_PAGE = must("an integer from 1 to 500");

export const ALERT_ROUTES = {
  /** The organization's webhooks (admins). */
  "GET /admin/v1/alerts": route({ query: z.strictObject({ org: orgRef() }), response: answer<List<AlertWebhook>>() }),
  /** Adds a webhook (admins): its secret is answered this once. */
  "POST /admin/v1/alerts": route({
    status: 201,
    body: z.strictObject({ org: orgRef(), name: nameText().nullish(), url: url(), events: events(), machine_offline_after_s: offlineAfter().default(300), error_rate_percent: errorRate().default(10) }),
    response: answer<NewAlertWebhook>(),
  }),
  /** Changes a webhook (admins): what the body names. */
  "PATCH /admin/v1/alerts/:id": route({
    body: z.strictObject({ name: nameText().nullish(), url: url().optional(), events: events().optional(), machine_offline_after_s: offlineAfter().optional(), error_rate_percent: errorRate().optional() }),
    response: answer<AlertWebhook>(),
  }),
  /** Removes a webhook, its secret and its deliveries (admins). */
  "DELETE /admin/v1/alerts/:id": route({ response: answer<{ id: string; deleted: true }>() }),
  /** Sends the webhook an `alert.test` event now (admins). */
  "POST /admin/v1/alerts/:id/test": route({ response: answer<{ id: string; queued: true }>() }),
  /** The webhook's deliveries, newest first (admins). */
  "GET /admin/v1/alerts/:id/deliveries": route({
    query: z.strictObject({ page: z.coerce.number(PAGE).int(PAGE).min(1, PAGE).default(1), per_page: z.coerce.number(PER_PAGE).int(PER_PAGE).min(1, PER_PAGE).max(500, PER_PAGE).default(50) }),
    response: answer<Page<AlertDelivery>>(),
  }),
} as const;
