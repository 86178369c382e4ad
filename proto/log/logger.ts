import { textLine, type LogFormat } from "./text-line.js";

/** Severity of a log line. */
export type LogLevel = "debug" | "info" | "warn" | "error";

const LEVELS: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** A structured logger: one JSON object per line, with bindings inherited by children. */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** A logger whose lines all carry `bindings` (for example `{component: "link", machineId}`). */
  child(bindings: Record<string, unknown>): Logger;
}

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** Lowest level written. @default "info" */
  level?: LogLevel;
  /** Where lines go. @default process.stderr */
  write?: (line: string) => void;
  /** Fields on every line. */
  bindings?: Record<string, unknown>;
  /**
   * JSON lines, or readable lines (`time LEVEL component: message key=value`); `auto`: readable when the lines
   * go to standard error and it is a terminal, JSON otherwise. @default "json"
   */
  format?: LogFormat | "auto";
}

/** The format `auto` stands for: readable lines in a terminal, JSON anywhere else (a file, a pipe, journald). */
export function resolveLogFormat(format: LogFormat | "auto" | undefined, toTerminal = process.stderr.isTTY === true): LogFormat {
  return format === "auto" ? (toTerminal ? "text" : "json") : (format ?? "json");
}

/**
 * Field names that hold secrets, compared whole (case, `_` and `-` ignored): `authorization`, `token`,
 * `apiKey`, `cookie`, `setCookie`, `sessionHash` (a web session's key), and any name ending in `token`, `secret` or `password`
 * (`machineToken`, `hf_token`, `newPassword`). Counting fields such as `completionTokens` are not secrets.
 */
function isSecretKey(name: string): boolean {
  const n = name.toLowerCase().replace(/[_-]/g, "");
  return n === "authorization" || n === "apikey" || n === "cookie" || n === "setcookie" || n === "key" || n === "sessionhash" || /(token|secret|password)$/.test(n);
}
/** Makina's own credentials, and Hugging Face access tokens (hf_ and 30 or more letters and digits). */
const SECRET_VALUE = /\b(mk_live_|mk_mach_|mk_admin_)[A-Za-z0-9]+|\b(hf_)[A-Za-z0-9]{30,}/g;

/**
 * A URL's query string, where signed download links carry their credentials (`?X-Amz-Signature=…`, `?token=…`),
 * and other schemes too (`postgres://…?password=…`, `wss://…?token=…`).
 */
const URL_QUERY = /(\b[a-z][a-z0-9+.-]*:\/\/[^\s?#"'<>]+)\?[^\s#"'<>]+/gi;

/** The password in a URL's user part (`postgres://makina:SECRET@db/makina`). */
const URL_PASSWORD = /(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:)[^\s@/]+@/gi;

/** A URL's user part that is one word, often a token (`https://ghp_…@github.com/…`). */
const URL_USER = /(\b[a-z][a-z0-9+.-]*:\/\/)[^\s:/@]+@/gi;

/**
 * A text with the credentials it may carry replaced: Makina's and Hugging Face's tokens, and in URLs the user
 * part's password (or the whole user part when it is one word, often a token) and the query string. Where a URL
 * leads is kept. What logs, the admin API and the audit log show of a model reference.
 */
export function redactText(text: string): string {
  const redacted = text.replace(SECRET_VALUE, (_m, makina: string | undefined, hf: string | undefined) => `${makina ?? hf}[redacted]`);
  // Most strings of a line hold no URL: the URL patterns run only on those that do (a log line per request).
  return redacted.includes("://") ? redacted.replace(URL_PASSWORD, "$1[redacted]@").replace(URL_USER, "$1[redacted]@").replace(URL_QUERY, "$1?[redacted]") : redacted;
}

/** Replaces secrets (by key name or by value shape) so no log line carries a credential. */
export function redact(value: unknown, depth = 0): unknown {
  if (typeof value === "string") return redactText(value);
  if (value instanceof Error) {
    return { name: value.name, message: redact(value.message), ...(value.cause ? { cause: redact(value.cause, depth + 1) } : {}) };
  }
  if (value === null || typeof value !== "object" || depth > 5) return value;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = isSecretKey(k) ? "[redacted]" : redact(v, depth + 1);
  return out;
}

/** Creates a logger (JSON lines, or readable lines for a terminal) with secrets redacted. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const min = LEVELS[options.level ?? "info"];
  const write = options.write ?? ((line: string) => process.stderr.write(line + "\n"));
  const text = resolveLogFormat(options.format, !options.write && process.stderr.isTTY === true) === "text";
  // Colours only on a terminal of our own that has them; Node's hasColors() honours NO_COLOR and FORCE_COLOR.
  const colour = text && !options.write && process.stderr.isTTY === true && process.stderr.hasColors?.() === true;
  const make = (bindings: Record<string, unknown>): Logger => {
    const log = (level: LogLevel) => (msg: string, fields?: Record<string, unknown>) => {
      if (LEVELS[level] < min) return;
      const line = redact({ time: new Date().toISOString(), level, msg, ...bindings, ...fields }) as Record<string, unknown>;
      write(text ? textLine(line, colour) : JSON.stringify(line));
    };
    return {
      debug: log("debug"),
      info: log("info"),
      warn: log("warn"),
      error: log("error"),
      child: (more) => make({ ...bindings, ...more }),
    };
  };
  return make(options.bindings ?? {});
}

/** A logger that writes nothing (for tests and quiet CLI commands). */
export function silentLogger(): Logger {
  return createLogger({ write: () => {} });
}
