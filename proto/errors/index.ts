export { anthropicError, ERROR_TABLE, isErrorCode, type ErrorCode, type ErrorMapping } from "./error-codes.js";
export { MakinaError, type MakinaErrorOptions } from "./makina-error.js";
