import { z } from "zod";
import { answer, route } from "./route.js";
import { orgRef } from "./fields.js";

/**
 * What the event stream announces (`event:` name and JSON `data:`, which says its type again): a machine, stack
 * or key changed, and a listener fetches it again. A key event's `key_id` is `*` when the organization's default
 * key limits changed.
 */
export type AdminEvent =
  | { event: "machine"; data: { type: "machine"; machine_id: string } }
  | { event: "stack"; data: { type: "stack"; stack_id: string } }
  | { event: "key"; data: { type: "key"; key_id: string } };

/** The names of the stream's events. */
export type AdminEventType = AdminEvent["event"];

/** The data of the event named `T`. */
export type AdminEventData<T extends AdminEventType> = Extract<AdminEvent, { event: T }>["data"];

export const EVENT_ROUTES = {
  /**
   * The organization's changes as server-sent events (`text/event-stream`), until the client goes away; a
   * comment every 15 s keeps it open. A user sees its own organization's; the operator names one, or sees all.
   */
  "GET /admin/v1/events": route({ query: z.strictObject({ org: orgRef() }), response: answer<AdminEvent>() }),
} as const;
