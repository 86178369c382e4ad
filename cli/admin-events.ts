import { bodyText, serverSentEvents } from "../proto/sse/index.js";
import type { AdminEvent } from "../relay/admin-contract/index.js";
import { routeUrl, type AdminTarget } from "./admin-client.js";

/** What {@link adminEvents} yields: an event of the relay's stream, or that the stream is (again) listening. */
export type FollowedEvent = AdminEvent | { event: "connected" | "reconnected"; data: null };

/**
 * Follows the relay's change events for an organization (`GET /admin/v1/events`,
 * server-sent events) until `signal` aborts. It first yields `connected` once
 * the relay listens for this stream (changes from then on arrive). When the
 * stream breaks (a relay restart), it reconnects and yields `reconnected`,
 * since changes may have been missed meanwhile.
 */
export async function* adminEvents(target: AdminTarget, org: string, signal: AbortSignal): AsyncGenerator<FollowedEvent> {
  let connected = false;
  const { url } = routeUrl(target, "GET /admin/v1/events", { query: { org } });
  while (!signal.aborted) {
    try {
      const res = await fetch(url, { headers: { authorization: `Bearer ${target.token}` }, signal });
      if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
      yield { event: connected ? "reconnected" : "connected", data: null };
      connected = true;
      for await (const { event, data } of serverSentEvents(bodyText(res.body))) yield { event, data: JSON.parse(data) } as AdminEvent;
    } catch (err) {
      if (signal.aborted) return;
      if (!connected) throw err;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
