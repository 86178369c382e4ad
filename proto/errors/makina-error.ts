import { ERROR_TABLE, isErrorCode, type ErrorCode } from "./error-codes.js";

/** Options of a {@link MakinaError}. */
export interface MakinaErrorOptions {
  /** The request parameter at fault, for the OpenAI body's `param`. */
  param?: string | null;
  /** When the client may retry, in milliseconds; rendered as `Retry-After`. */
  retryAfterMs?: number;
  /** The underlying error, for the log only; never shown to clients. */
  cause?: unknown;
}

/**
 * The one error type of Makina. Anything thrown is normalised once with
 * {@link MakinaError.from}; the message is always fit for a client.
 */
export class MakinaError extends Error {
  override readonly name = "MakinaError";
  readonly code: ErrorCode;
  readonly param: string | null;
  readonly retryAfterMs: number | undefined;

  constructor(code: ErrorCode, message: string, options: MakinaErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.param = options.param ?? null;
    this.retryAfterMs = options.retryAfterMs;
  }

  /** The HTTP status, gRPC status and OpenAI type/code of this error. */
  get mapping() {
    return ERROR_TABLE[this.code];
  }

  /** The OpenAI-shaped error body, all four keys present. */
  toBody(): { error: { message: string; type: string; param: string | null; code: string | null } } {
    return { error: { message: this.message, type: this.mapping.type, param: this.param, code: this.mapping.openaiCode } };
  }

  /**
   * Normalises anything thrown: a MakinaError stays as it is, an abort becomes
   * `canceled`, a refused connection becomes `runtime_unavailable`, and anything
   * else becomes `internal_error` with the original kept as `cause` for the log.
   */
  static from(err: unknown): MakinaError {
    if (err instanceof MakinaError) return err;
    if (err instanceof Error && (err.name === "AbortError" || (err as { code?: string }).code === "ABORT_ERR")) {
      return new MakinaError("canceled", "The request was canceled.", { cause: err });
    }
    const sysCode = (err as { code?: unknown } | null)?.code;
    if (sysCode === "ECONNREFUSED" || sysCode === "ECONNRESET") {
      return new MakinaError("runtime_unavailable", "The runtime is not reachable.", { cause: err, retryAfterMs: 1000 });
    }
    return new MakinaError("internal_error", "The server had an error while processing your request.", { cause: err });
  }

  /** Rebuilds an error that crossed the link as `{code, message, retryAfterMs}`. */
  static fromLink(code: string, message: string, retryAfterMs?: number, param?: string): MakinaError {
    return isErrorCode(code) ? new MakinaError(code, message, { retryAfterMs, param }) : new MakinaError("internal_error", message);
  }
}
