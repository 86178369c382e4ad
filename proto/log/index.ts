export { createLogger, silentLogger, redact, type Logger, type LoggerOptions, type LogLevel } from "./logger.js";
