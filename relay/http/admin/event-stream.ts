import type { Response } from "express";
import type { AdminEvent } from "../../admin-contract/index.js";
import type { EventBus, RelayEvent } from "../../events/index.js";
import { toWire } from "./to-wire.js";

/** How often an idle stream sends a comment, so proxies and browsers keep it open. */
const KEEPALIVE_MS = 15_000;

/** A bus event as the contract's stream announces it: its type is the event's name, what it names its data. */
function announced(event: RelayEvent): AdminEvent {
  switch (event.type) {
    case "machine":
      return { event: "machine", data: toWire({ type: "machine" as const, machineId: event.machineId }) };
    case "stack":
      return { event: "stack", data: toWire({ type: "stack" as const, stackId: event.stackId }) };
    case "key":
      return { event: "key", data: toWire({ type: "key" as const, keyId: event.keyId }) };
  }
}

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
      const { event: name, data } = announced(event);
      res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
    },
    () => res.end(),
  );
  const keepalive = setInterval(() => res.write(": keepalive\n\n"), KEEPALIVE_MS);
  res.on("close", () => {
    clearInterval(keepalive);
    unsubscribe();
  });
}
