import { status } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { ERROR_TABLE, MakinaError, type ErrorCode } from "../../proto/index.js";

// Every row of ../shared/spec/decisions.md's error table: status, type, code.
const DECISIONS: [ErrorCode, number, string, string][] = [
  ["missing_api_key", 401, "authentication_error", "missing_api_key"],
  ["invalid_api_key", 401, "authentication_error", "invalid_api_key"],
  ["model_access_denied", 403, "permission_error", "model_access_denied"],
  ["model_not_found", 404, "invalid_request_error", "model_not_found"],
  ["rate_limit_requests", 429, "requests", "rate_limit_exceeded"],
  ["rate_limit_tokens", 429, "tokens", "rate_limit_exceeded"],
  ["machine_offline", 503, "service_unavailable_error", "machine_offline"],
  ["runtime_unavailable", 503, "service_unavailable_error", "runtime_unavailable"],
  ["unsupported_endpoint", 404, "invalid_request_error", "unsupported_endpoint"],
  ["unknown_url", 404, "invalid_request_error", "unknown_url"],
  ["invalid_json", 400, "invalid_request_error", "invalid_json"],
  ["unsupported_media_type", 415, "invalid_request_error", "unsupported_media_type"],
  ["missing_required_parameter", 400, "invalid_request_error", "missing_required_parameter"],
  ["invalid_value", 400, "invalid_request_error", "invalid_value"],
  ["unknown_parameter", 400, "invalid_request_error", "unknown_parameter"],
  ["unsupported_parameter", 400, "invalid_request_error", "unsupported_parameter"],
  ["context_length_exceeded", 400, "invalid_request_error", "context_length_exceeded"],
  ["request_too_large", 413, "invalid_request_error", "request_too_large"],
  ["internal_error", 500, "server_error", "internal_error"],
  ["stream_incomplete", 500, "server_error", "stream_incomplete"],
];

describe("the one error table", () => {
  it.each(DECISIONS)("maps %s to HTTP %i, type %s, code %s", (code, http, type, openaiCode) => {
    expect(ERROR_TABLE[code]).toMatchObject({ http, type, openaiCode });
  });

  it("gives every code a gRPC status, an HTTP status and an OpenAI type and code", () => {
    for (const [code, m] of Object.entries(ERROR_TABLE)) {
      expect(Object.values(status), code).toContain(m.grpc);
      expect(m.http, code).toBeGreaterThanOrEqual(400);
      expect(m.type.length, code).toBeGreaterThan(0);
      expect(m.openaiCode.length, code).toBeGreaterThan(0);
    }
  });

  it("renders the envelope with all four keys", () => {
    expect(new MakinaError("model_not_found", "The model `x` does not exist or is not deployed.", { param: "model" }).toBody()).toEqual({
      error: { message: "The model `x` does not exist or is not deployed.", type: "invalid_request_error", param: "model", code: "model_not_found" },
    });
    expect(new MakinaError("internal_error", "boom").toBody().error.param).toBeNull();
  });

  it("normalises anything thrown once", () => {
    expect(MakinaError.from(new DOMException("x", "AbortError")).code).toBe("canceled");
    expect(MakinaError.from(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })).code).toBe("runtime_unavailable");
    const e = MakinaError.from(new Error("secret detail"));
    expect(e.code).toBe("internal_error");
    expect(e.message).not.toContain("secret detail");
    expect(MakinaError.fromLink("machine_offline", "gone").code).toBe("machine_offline");
    expect(MakinaError.fromLink("no_such_code", "?").code).toBe("internal_error");
  });
});
