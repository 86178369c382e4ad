import type { Response } from "express";
import type { EventBus, RelayEvent } from "../../events/index.js";
import { snakeCase } from "./snake-case.js";

/** How often an idle stream sends a comment, so proxies and browsers keep it open. */
const KEEPALIVE_MS = 15_000;

/**
 * Streams the bus's events that pass `filter` as server-sent events
 * (`event: machine|stack|key`, `data: {"machine_id": …}`) until the client goes away.
 * The browser's EventSource reconnects by itself; a page then reloads what it shows.
 */
export function streamEvents(res: Response, bus: EventBus, filter: (event: RelayEvent) => boolean): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store", connection: "keep-alive", "x-accel-buffering": "no" });
  res.write(": makina events\nretry: 2000\n\n");
  const unsubscribe = bus.subscribe(
    (event) => {
      if (!filter(event)) return;
      const { orgId: _org, ...data } = event;
      res.write(`event: ${event.type}\ndata: ${JSON.stringify(snakeCase(data))}\n\n`);
    },
    () => res.end(),
  );
  const keepalive = setInterval(() => res.write(": keepalive\n\n"), KEEPALIVE_MS);
  res.on("close", () => {
    clearInterval(keepalive);
    unsubscribe();
  });
}
