export { createLogger, silentLogger, redact, redactText, resolveLogFormat, type Logger, type LoggerOptions, type LogLevel } from "./logger.js";
export { textLine, type LogFormat } from "./text-line.js";
export { WarningThrottle } from "./warning-throttle.js";
export { LogBook, bookedLogger, redactOutputLine } from "./log-book.js";
