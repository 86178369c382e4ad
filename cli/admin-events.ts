import type { AdminTarget } from "./admin-client.js";

/** One change the relay announced: `event` is `machine`, `stack` or `key`; `data` names it. */
export interface AdminEvent {
  event: string;
  data: Record<string, string>;
}

/** Reads named server-sent events (`event:` and a JSON `data:` line) from a response body until it ends. */
export async function* serverSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<AdminEvent> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let i: number;
      while ((i = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, i);
        buffer = buffer.slice(i + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (event && data) yield { event, data: JSON.parse(data) as Record<string, string> };
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/**
 * Follows the relay's change events for an organization (`/admin/v1/events`,
 * server-sent events) until `signal` aborts. It first yields `connected` once
 * the relay listens for this stream (changes from then on arrive). When the
 * stream breaks (a relay restart), it reconnects and yields `reconnected`,
 * since changes may have been missed meanwhile.
 */
export async function* adminEvents(target: AdminTarget, org: string, signal: AbortSignal): AsyncGenerator<AdminEvent> {
  let connected = false;
  while (!signal.aborted) {
    try {
      const res = await fetch(`${target.url}/admin/v1/events?org=${encodeURIComponent(org)}`, { headers: { authorization: `Bearer ${target.token}` }, signal });
      if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
      yield { event: connected ? "reconnected" : "connected", data: {} };
      connected = true;
      yield* serverSentEvents(res.body);
    } catch (err) {
      if (signal.aborted) return;
      if (!connected) throw err;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
