import type { LogLine } from "../link/link-messages.js";
import { redact, redactText, type Logger, type LogLevel } from "./logger.js";
import { textLine } from "./text-line.js";

/** Lines kept of each source. */
const LINES_PER_SOURCE = 500;
/** Sources kept at once (the machine's own and its stacks'); a stack's goes once it is removed, or when more come. */
const MAX_SOURCES = 64;
/** The longest line kept, in characters: at most 64 × 500 lines of 1,000 characters in all. */
const MAX_LINE_CHARS = 1000;

/**
 * The last lines of a machine's log, kept in memory for an admin to read over the link: the agent's own (every
 * line it writes at `info` and above, source ""), and each stack's (its runtime's process output, and the agent's
 * lines about that stack). Lines are numbered in one count for the machine, so a reader asks for those after the
 * last it has. Bounded: the last {@link LINES_PER_SOURCE} of each source, {@link MAX_SOURCES} sources. What
 * goes in is already redacted as the agent's log is.
 */
export class LogBook {
  /**
   * The last line's number. It starts at the agent's start time in microseconds, so a restarted agent numbers
   * its lines above every line of the one before: a page that read up to line N gets the new agent's lines next.
   */
  private seq: number;
  /** Each source's lines, and the number of the last line it dropped (0: none). */
  private readonly sources = new Map<string, { lines: LogLine[]; dropped: number }>();

  constructor(private readonly now: () => number = Date.now) {
    this.seq = now() * 1000;
  }

  /** Adds a line to `source` ("" the machine's own; a stack's id); a stack's lines go to the machine's too. */
  add(source: string, level: string, text: string): void {
    const line: LogLine = { seq: ++this.seq, timeMs: this.now(), level, text: text.length > MAX_LINE_CHARS ? `${text.slice(0, MAX_LINE_CHARS - 1)}…` : text };
    this.push(source, line);
    if (source !== "") this.push("", line);
  }

  /** The lines of `source` after `after`, at most `limit`, oldest first; `truncated` when older ones than the first were dropped. */
  read(source: string, after: number, limit: number): { logLines: LogLine[]; logTruncated: boolean } {
    const kept = this.sources.get(source);
    if (!kept) return { logLines: [], logTruncated: false };
    const from = kept.lines.findIndex((l) => l.seq > after);
    const found = from < 0 ? [] : kept.lines.slice(from, from + Math.max(1, Math.min(limit, LINES_PER_SOURCE)));
    return { logLines: found, logTruncated: kept.dropped > after };
  }

  /** Forgets a stack's lines (it is no longer served here). */
  forget(source: string): void {
    if (source !== "") this.sources.delete(source);
  }

  private push(source: string, line: LogLine): void {
    let kept = this.sources.get(source);
    if (!kept) {
      if (this.sources.size >= MAX_SOURCES) {
        const oldest = [...this.sources.keys()].find((k) => k !== "");
        if (oldest !== undefined) this.sources.delete(oldest);
      }
      this.sources.set(source, (kept = { lines: [], dropped: 0 }));
    }
    kept.lines.push(line);
    if (kept.lines.length > LINES_PER_SOURCE) kept.dropped = kept.lines.splice(0, kept.lines.length - LINES_PER_SOURCE).at(-1)!.seq;
  }
}

const KEPT: Record<LogLevel, boolean> = { debug: false, info: true, warn: true, error: true };

/**
 * A logger that writes through `log` and keeps each line of `info` and above in `book`, redacted as the log is,
 * under the stack it is about (a `stackId` field or binding) and the machine's own.
 */
export function bookedLogger(log: Logger, book: LogBook, bindings: Record<string, unknown> = {}): Logger {
  const at = (level: LogLevel) => (msg: string, fields?: Record<string, unknown>) => {
    log[level](msg, fields);
    if (!KEPT[level]) return;
    const record = redact({ msg, ...bindings, ...fields }) as Record<string, unknown>;
    const stackId = typeof record.stackId === "string" ? record.stackId : "";
    // The time and level are the line's own fields: the text is the rest, as a readable line has it.
    const text = textLine({ ...record, time: undefined, level: undefined }, false).replace(/^\S+ \S+\s+/, "");
    book.add(stackId, level, text);
  };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), child: (more) => bookedLogger(log.child(more), book, { ...bindings, ...more }) };
}

/** A credential by its name in a runtime's output: `Authorization: Bearer …`, `api_key=…`, `"password": "…"`. */
const NAMED_SECRET = /\b(bearer\s+|(?:api[_-]?key|access[_-]?token|auth[_-]?token|token|secret|password)["']?\s*[=:]\s*["']?)[^\s"',;]+/gi;

/**
 * A line a runtime's process wrote, as kept for an admin to read: what the agent's log redacts by shape
 * (Makina's and Hugging Face's tokens, URL credentials and query strings), and a value that follows a
 * credential's name (`Bearer`, `api_key=`, `token:`, `password=`). A process may print anything: a line is never
 * known to be clean, only cleaner.
 */
export function redactOutputLine(line: string): string {
  return redactText(line).replace(NAMED_SECRET, "$1[redacted]");
}
