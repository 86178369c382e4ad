import type { CapturedExchange } from "../usage/index.js";

/** A captured prompt and answer, with until when the request log keeps them. */
export type Capture = CapturedExchange & { until: number };

/** The most of a captured prompt (its messages as JSON) and of a captured answer kept, in characters. */
const CAPTURE_CHARS = 64 * 1024;

/** The most tool calls of one answer a capture keeps. */
const CAPTURE_CALLS = 64;

/** A capture of a request's messages (cut to {@link CAPTURE_CHARS} as JSON text), its answer to come. */
export function captureOf(messages: unknown, until: number): Capture {
  const json = JSON.stringify(messages);
  const whole = json.length <= CAPTURE_CHARS;
  return { messages: whole ? messages : json.slice(0, CAPTURE_CHARS), answer: "", toolCalls: [], truncated: !whole, until };
}

/** More of the answer's text, within the size. */
export function captureText(capture: CapturedExchange, text: string): void {
  const room = CAPTURE_CHARS - capture.answer.length;
  if (text.length > room) capture.truncated = true;
  if (room > 0) capture.answer += text.slice(0, room);
}

/** A tool call's piece: the call at `index` gets its name and more of its arguments, within the size. */
export function captureCall(capture: CapturedExchange, name: string, args: string, index: number): void {
  // An index the machine makes up is not an array's length: the capture keeps the first calls only.
  if (!Number.isInteger(index) || index < 0 || index >= CAPTURE_CALLS) {
    capture.truncated = true;
    return;
  }
  const call = (capture.toolCalls[index] ??= { name, arguments: "" });
  if (name) call.name = name;
  const room = CAPTURE_CHARS - call.arguments.length;
  if (args.length > room) capture.truncated = true;
  if (room > 0) call.arguments += args.slice(0, room);
}
