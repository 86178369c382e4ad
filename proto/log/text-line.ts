/** How log lines are written: one JSON object each (for machines), or one readable line each (for a terminal). */
export type LogFormat = "json" | "text";

/** ANSI colours of the levels in a terminal (NO_COLOR turns them off). */
const COLOURS: Record<string, string> = { debug: "\x1b[90m", info: "\x1b[36m", warn: "\x1b[33m", error: "\x1b[31m" };
const RESET = "\x1b[0m";
const DIM = "\x1b[2m";

/** The longest a field's value is shown, in characters: a line stays a line. */
const MAX_VALUE_CHARS = 200;

/** An error (as {@link redact} leaves it: name, message, cause) in words: its message, then each cause's after `←`. */
function errorText(e: Record<string, unknown>, depth = 0): string {
  const message = typeof e.message === "string" ? e.message : JSON.stringify(e);
  const cause = e.cause;
  if (cause && typeof cause === "object" && depth < 4) return `${message} ← ${errorText(cause as Record<string, unknown>, depth + 1)}`;
  return cause !== undefined && cause !== null ? `${message} ← ${String(cause)}` : message;
}

const isError = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v) && typeof (v as { message?: unknown }).message === "string";

/** Control characters JSON leaves as they are (DEL and C1): a terminal could read them as commands. */
const UNESCAPED_CONTROLS = /[\u007f-\u009f]/g;
/** Text safe to print bare: printable, no space, quote or `=`. */
const PLAIN = /^[^\s"'=\p{Cc}\p{Cf}\p{Zl}\p{Zp}]+$/u;

/** DEL and C1 controls written as JSON escapes (`\u009b`), as JSON writes the others. */
const escapeControls = (text: string) => text.replace(UNESCAPED_CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);

/** Text as a terminal may print it: bare when plain, else quoted with every control character escaped. */
function quoted(text: string): string {
  return PLAIN.test(text) ? text : escapeControls(JSON.stringify(text));
}

/** A field's value as written after `key=`: plain when it has no space, quote or control character, quoted otherwise; objects as compact JSON. */
function valueText(v: unknown): string {
  const text = isError(v) ? errorText(v) : typeof v === "string" ? v : v === undefined ? "undefined" : JSON.stringify(v);
  // An error is said whole: it is what the line is for.
  const short = text.length > MAX_VALUE_CHARS && !isError(v) ? `${text.slice(0, MAX_VALUE_CHARS - 1)}…` : text;
  return typeof v === "string" || isError(v) ? quoted(short) : escapeControls(short);
}

/** A message, component or field name: as it is when it holds no control character, quoted otherwise. */
const safe = (text: string) => (/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u.test(text) ? quoted(text) : text);

/**
 * One log record as a line a person reads: local time, level, the component, the message, then its fields as
 * `key=value` (errors as their messages and causes, long values cut). `colour` adds ANSI colours for a terminal.
 */
export function textLine(record: Record<string, unknown>, colour: boolean): string {
  const { time, level, msg, component, ...fields } = record;
  const at = typeof time === "string" ? new Date(time) : new Date();
  const clock = `${String(at.getHours()).padStart(2, "0")}:${String(at.getMinutes()).padStart(2, "0")}:${String(at.getSeconds()).padStart(2, "0")}`;
  const lvl = String(level ?? "info");
  const label = lvl.toUpperCase().padEnd(5);
  const rest = Object.entries(fields)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${safe(k)}=${valueText(v)}`)
    .join(" ");
  const where = component ? `${safe(String(component))}: ` : "";
  const message = safe(String(msg));
  if (!colour) return `${clock} ${label} ${where}${message}${rest ? `  ${rest}` : ""}`;
  return `${DIM}${clock}${RESET} ${COLOURS[lvl] ?? ""}${label}${RESET} ${where}${message}${rest ? `  ${DIM}${rest}${RESET}` : ""}`;
}
