import type { RuntimeEvent } from "../model-runtime.js";

/** Consecutive text events as one, consecutive pieces of one tool call as one: fewer chunks on the link. */
export function mergePieces(events: RuntimeEvent[]): RuntimeEvent[] {
  const out: RuntimeEvent[] = [];
  for (const ev of events) {
    const last = out[out.length - 1];
    if (last?.type === "text" && ev.type === "text") out[out.length - 1] = { type: "text", text: last.text + ev.text };
    else if (last?.type === "toolCall" && ev.type === "toolCall" && ev.index === last.index && !ev.id) out[out.length - 1] = { ...last, arguments: last.arguments + ev.arguments };
    else out.push(ev);
  }
  return out;
}
