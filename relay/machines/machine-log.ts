import type { LogLine, MachineLog } from "../../proto/index.js";

/** The most lines one read of a machine's log carries. */
export const MAX_LOG_LINES = 200;
/** The longest line passed on, in characters (the agent keeps at most 1,000). */
const MAX_LOG_TEXT = 2000;
/** The most bytes of lines one reply between relays carries: well under the bus's message size. */
const MAX_LOG_BYTES = 256 * 1024;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * A machine's log lines as the relay passes them on, whoever sent them (the machine's agent over its link, or
 * the relay holding that link): at most `limit` lines, each numbered, with a level of one short word and a text
 * within bounds, in order. Undefined when what came is not lines at all.
 */
export function cleanLog(lines: unknown, truncated: unknown, limit: number): MachineLog | undefined {
  if (!Array.isArray(lines)) return undefined;
  const logLines: LogLine[] = [];
  for (const l of lines.slice(0, Math.min(limit, MAX_LOG_LINES)) as unknown[]) {
    if (!isObject(l) || !Number.isSafeInteger(l.seq) || !Number.isSafeInteger(l.timeMs) || typeof l.level !== "string" || !/^[a-z]{1,10}$/.test(l.level) || typeof l.text !== "string") return undefined;
    if (logLines.length > 0 && (l.seq as number) <= logLines.at(-1)!.seq) return undefined;
    logLines.push({ seq: l.seq as number, timeMs: l.timeMs as number, level: l.level, text: l.text.slice(0, MAX_LOG_TEXT) });
  }
  return { logLines, logTruncated: truncated === true };
}

/** The first lines that fit one reply between relays ({@link MAX_LOG_BYTES} as JSON): the reader asks for the rest next. */
export function withinReplySize(lines: readonly LogLine[]): LogLine[] {
  let bytes = 0;
  const kept: LogLine[] = [];
  for (const line of lines) {
    bytes += Buffer.byteLength(JSON.stringify(line));
    if (bytes > MAX_LOG_BYTES) break;
    kept.push(line);
  }
  return kept;
}
