import { fromErrorReport, MakinaError, type ErrorCode, type ErrorReport } from "../../proto/index.js";

/** Errors a runtime may answer an inference request with; anything else an agent sends becomes a plain 500. */
const INFERENCE_ERRORS: ReadonlySet<ErrorCode> = new Set<ErrorCode>(["runtime_unavailable", "insufficient_memory", "context_length_exceeded", "invalid_value", "unsupported_parameter", "canceled", "timeout", "internal_error"]);

/** Longest error message kept from an agent. */
const MAX_MESSAGE_CHARS = 2000;

/** Errors a deployment step may fail with. */
const STEP_ERRORS: ReadonlySet<ErrorCode> = new Set<ErrorCode>([...INFERENCE_ERRORS, "not_found", "model_access_denied"]);

/**
 * An error an agent reported, as the relay believes it: only codes a runtime (or a deployment step) can
 * mean are kept, so a machine cannot make a client see `invalid_api_key` or a rate limit; any other becomes
 * `internal_error` with the generic message (the agent's words are not shown).
 */
export function fromAgentError(report: ErrorReport, kind: "inference" | "step"): MakinaError {
  // What a machine says is shown to clients and stored: cut to a size a person reads.
  const e = fromErrorReport({ ...report, message: report.message.slice(0, MAX_MESSAGE_CHARS) });
  return (kind === "inference" ? INFERENCE_ERRORS : STEP_ERRORS).has(e.code) ? e : MakinaError.from(new Error(`an agent reported the error code '${report.code}'`));
}
