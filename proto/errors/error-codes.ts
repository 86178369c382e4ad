import { status as GrpcStatus } from "@grpc/grpc-js";

/**
 * Every error Makina can report, on either side of the link. The string is what
 * travels in `LinkError.code`; `ERROR_TABLE` maps it to the gRPC status, the HTTP
 * status and the OpenAI error `type` / `code`.
 */
export type ErrorCode =
  | "missing_api_key"
  | "invalid_api_key"
  | "model_access_denied"
  | "model_not_found"
  | "rate_limit_requests"
  | "rate_limit_tokens"
  | "budget_exceeded"
  | "machine_offline"
  | "runtime_unavailable"
  | "insufficient_memory"
  | "unsupported_endpoint"
  | "unknown_url"
  | "invalid_json"
  | "unsupported_media_type"
  | "missing_required_parameter"
  | "invalid_value"
  | "unknown_parameter"
  | "unsupported_parameter"
  | "context_length_exceeded"
  | "request_too_large"
  | "bad_request"
  | "headers_too_large"
  | "request_timeout"
  | "stream_incomplete"
  | "canceled"
  | "timeout"
  | "invalid_admin_token"
  | "invalid_credentials"
  | "sign_in_throttled"
  | "too_many_streams"
  | "permission_denied"
  | "invalid_csrf_token"
  | "invalid_machine_token"
  | "unsupported_protocol"
  | "not_found"
  | "incompatible_stack"
  | "conflict"
  | "storage_unavailable"
  | "limits_unavailable"
  | "hub_unavailable"
  | "internal_error";

/** How one error code appears to each kind of peer. */
export interface ErrorMapping {
  /** gRPC status used when the error ends a call. */
  readonly grpc: GrpcStatus;
  /** HTTP status of the gateway's answer. */
  readonly http: number;
  /** OpenAI error body `type`. */
  readonly type: string;
  /** OpenAI error body `code`. */
  readonly openaiCode: string;
}

const S = GrpcStatus;

/** The one table from error code to gRPC status, HTTP status and OpenAI body. */
export const ERROR_TABLE: Readonly<Record<ErrorCode, ErrorMapping>> = Object.freeze({
  missing_api_key: { grpc: S.UNAUTHENTICATED, http: 401, type: "authentication_error", openaiCode: "missing_api_key" },
  invalid_api_key: { grpc: S.UNAUTHENTICATED, http: 401, type: "authentication_error", openaiCode: "invalid_api_key" },
  model_access_denied: { grpc: S.PERMISSION_DENIED, http: 403, type: "permission_error", openaiCode: "model_access_denied" },
  model_not_found: { grpc: S.NOT_FOUND, http: 404, type: "invalid_request_error", openaiCode: "model_not_found" },
  rate_limit_requests: { grpc: S.RESOURCE_EXHAUSTED, http: 429, type: "requests", openaiCode: "rate_limit_exceeded" },
  rate_limit_tokens: { grpc: S.RESOURCE_EXHAUSTED, http: 429, type: "tokens", openaiCode: "rate_limit_exceeded" },
  budget_exceeded: { grpc: S.RESOURCE_EXHAUSTED, http: 429, type: "insufficient_quota", openaiCode: "budget_exceeded" },
  machine_offline: { grpc: S.UNAVAILABLE, http: 503, type: "service_unavailable_error", openaiCode: "machine_offline" },
  runtime_unavailable: { grpc: S.UNAVAILABLE, http: 503, type: "service_unavailable_error", openaiCode: "runtime_unavailable" },
  insufficient_memory: { grpc: S.RESOURCE_EXHAUSTED, http: 503, type: "service_unavailable_error", openaiCode: "insufficient_memory" },
  unsupported_endpoint: { grpc: S.UNIMPLEMENTED, http: 404, type: "invalid_request_error", openaiCode: "unsupported_endpoint" },
  unknown_url: { grpc: S.UNIMPLEMENTED, http: 404, type: "invalid_request_error", openaiCode: "unknown_url" },
  invalid_json: { grpc: S.INVALID_ARGUMENT, http: 400, type: "invalid_request_error", openaiCode: "invalid_json" },
  unsupported_media_type: { grpc: S.INVALID_ARGUMENT, http: 415, type: "invalid_request_error", openaiCode: "unsupported_media_type" },
  missing_required_parameter: { grpc: S.INVALID_ARGUMENT, http: 400, type: "invalid_request_error", openaiCode: "missing_required_parameter" },
  invalid_value: { grpc: S.INVALID_ARGUMENT, http: 400, type: "invalid_request_error", openaiCode: "invalid_value" },
  unknown_parameter: { grpc: S.INVALID_ARGUMENT, http: 400, type: "invalid_request_error", openaiCode: "unknown_parameter" },
  unsupported_parameter: { grpc: S.INVALID_ARGUMENT, http: 400, type: "invalid_request_error", openaiCode: "unsupported_parameter" },
  context_length_exceeded: { grpc: S.INVALID_ARGUMENT, http: 400, type: "invalid_request_error", openaiCode: "context_length_exceeded" },
  request_too_large: { grpc: S.RESOURCE_EXHAUSTED, http: 413, type: "invalid_request_error", openaiCode: "request_too_large" },
  bad_request: { grpc: S.INVALID_ARGUMENT, http: 400, type: "invalid_request_error", openaiCode: "bad_request" },
  headers_too_large: { grpc: S.RESOURCE_EXHAUSTED, http: 431, type: "invalid_request_error", openaiCode: "headers_too_large" },
  request_timeout: { grpc: S.DEADLINE_EXCEEDED, http: 408, type: "invalid_request_error", openaiCode: "request_timeout" },
  stream_incomplete: { grpc: S.ABORTED, http: 500, type: "server_error", openaiCode: "stream_incomplete" },
  canceled: { grpc: S.CANCELLED, http: 499, type: "server_error", openaiCode: "canceled" },
  timeout: { grpc: S.DEADLINE_EXCEEDED, http: 504, type: "server_error", openaiCode: "timeout" },
  invalid_admin_token: { grpc: S.UNAUTHENTICATED, http: 401, type: "authentication_error", openaiCode: "invalid_admin_token" },
  invalid_credentials: { grpc: S.UNAUTHENTICATED, http: 401, type: "authentication_error", openaiCode: "invalid_credentials" },
  sign_in_throttled: { grpc: S.RESOURCE_EXHAUSTED, http: 429, type: "authentication_error", openaiCode: "sign_in_throttled" },
  too_many_streams: { grpc: S.RESOURCE_EXHAUSTED, http: 429, type: "rate_limit_error", openaiCode: "too_many_streams" },
  permission_denied: { grpc: S.PERMISSION_DENIED, http: 403, type: "permission_error", openaiCode: "permission_denied" },
  invalid_csrf_token: { grpc: S.PERMISSION_DENIED, http: 403, type: "permission_error", openaiCode: "invalid_csrf_token" },
  invalid_machine_token: { grpc: S.UNAUTHENTICATED, http: 401, type: "authentication_error", openaiCode: "invalid_machine_token" },
  unsupported_protocol: { grpc: S.FAILED_PRECONDITION, http: 400, type: "invalid_request_error", openaiCode: "unsupported_protocol" },
  not_found: { grpc: S.NOT_FOUND, http: 404, type: "invalid_request_error", openaiCode: "not_found" },
  incompatible_stack: { grpc: S.FAILED_PRECONDITION, http: 400, type: "invalid_request_error", openaiCode: "incompatible_stack" },
  conflict: { grpc: S.FAILED_PRECONDITION, http: 409, type: "invalid_request_error", openaiCode: "conflict" },
  storage_unavailable: { grpc: S.UNAVAILABLE, http: 503, type: "service_unavailable_error", openaiCode: "storage_unavailable" },
  limits_unavailable: { grpc: S.UNAVAILABLE, http: 503, type: "service_unavailable_error", openaiCode: "limits_unavailable" },
  hub_unavailable: { grpc: S.UNAVAILABLE, http: 502, type: "server_error", openaiCode: "hub_unavailable" },
  internal_error: { grpc: S.INTERNAL, http: 500, type: "server_error", openaiCode: "internal_error" },
});

/** True when `value` names a known error code (for codes arriving over the link). */
export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(ERROR_TABLE, value);
}

/**
 * The Anthropic Messages API's error `type` and HTTP status for each of the table's statuses: the same status,
 * except that a machine or runtime that cannot take the request is 529 `overloaded_error`, as Anthropic says an
 * overloaded service.
 */
const ANTHROPIC_BY_STATUS: Readonly<Record<number, { status: number; type: string }>> = Object.freeze({
  400: { status: 400, type: "invalid_request_error" },
  401: { status: 401, type: "authentication_error" },
  403: { status: 403, type: "permission_error" },
  404: { status: 404, type: "not_found_error" },
  408: { status: 408, type: "invalid_request_error" },
  409: { status: 409, type: "invalid_request_error" },
  413: { status: 413, type: "request_too_large" },
  415: { status: 415, type: "invalid_request_error" },
  429: { status: 429, type: "rate_limit_error" },
  431: { status: 431, type: "invalid_request_error" },
  499: { status: 499, type: "api_error" },
  500: { status: 500, type: "api_error" },
  502: { status: 502, type: "api_error" },
  503: { status: 529, type: "overloaded_error" },
  504: { status: 504, type: "timeout_error" },
});

/** How an error code appears in the Anthropic Messages API: its HTTP status and error `type`. */
export function anthropicError(mapping: ErrorMapping): { status: number; type: string } {
  return ANTHROPIC_BY_STATUS[mapping.http] ?? { status: mapping.http, type: "api_error" };
}
