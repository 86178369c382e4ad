import type { ChatInput, RuntimeEvent } from "../../agent/runtimes/model-runtime.js";

/** A runtime's request for a long story of up to `maxTokens` tokens, streamed, at temperature 0. */
export const story = (maxTokens: number): ChatInput => ({
  messages: [{ role: "user", content: "Tell me a long story" }],
  temperature: 0,
  topP: 1,
  maxTokens,
  stop: [],
  presencePenalty: 0,
  frequencyPenalty: 0,
  stream: true,
});

/** Every event a runtime's answer gives, read to its end. */
export async function drain(events: AsyncIterator<RuntimeEvent>): Promise<RuntimeEvent[]> {
  const all: RuntimeEvent[] = [];
  for (let ev = await events.next(); !ev.done; ev = await events.next()) all.push(ev.value);
  return all;
}
