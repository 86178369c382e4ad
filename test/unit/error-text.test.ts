import { describe, expect, it } from "vitest";
import { ERROR_TABLE } from "../../proto/errors/error-codes.js";
import { ERROR_TEXTS, errorText } from "../../relay/web/src/api/error-text.js";

// The web application's words for the relay's errors (issue 21, point 6): one table from code to text.
describe("the web application's error texts", () => {
  it("says a refused value with its field's label and a form's words, not the API's", () => {
    expect(errorText("invalid_value", "rpm", "'rpm' must be a positive integer.")).toBe("Requests per minute must be a whole number of 1 or more.");
    expect(errorText("invalid_value", "default_key_tpm", "'default_key_tpm' must be a positive integer, or null for none.")).toBe("Tokens per minute must be a whole number of 1 or more, or empty for none.");
    expect(errorText("invalid_value", "harness_options.prompt", "'harness_options.prompt' must be a non-empty string.")).toBe("System prompt must be a non-empty string.");
    expect(errorText("invalid_value", "orchestrator_options.samples", "'orchestrator_options.samples' must be an integer from 2 to 8.")).toBe("Samples must be a whole number from 2 to 8.");
    expect(errorText("missing_required_parameter", "name", "Missing required parameter: 'name'.")).toBe("Name is required.");
    // A parameter no page has a field for keeps the relay's sentence.
    expect(errorText("invalid_value", "per_page", "'per_page' must be an integer from 1 to 1000.")).toBe("'per_page' must be an integer from 1 to 1000.");
  });

  it("says what a failure of the relay or the network means for the page, and keeps the relay's own sentences for people", () => {
    expect(errorText("network_error", null, "fetch failed")).toMatch(/^The relay cannot be reached/);
    expect(errorText("storage_unavailable", null, "SQLITE_BUSY: database is locked")).toBe("The relay cannot reach its database just now, so nothing was changed. Try again in a moment.");
    expect(errorText("internal_error", null, "TypeError: x is undefined")).not.toContain("TypeError");
    expect(errorText("invalid_csrf_token", null, "Missing or invalid CSRF token.")).toMatch(/Reload the page/);
    const conflict = "The stack 'tiny' is deploying: wait until it has settled, then change its model.";
    expect(errorText("conflict", "stack", conflict)).toBe(conflict);
    expect(errorText("permission_denied", null, "Only an organization admin can delete stacks.")).toBe("Only an organization admin can delete stacks.");
  });

  it("places every error code the relay has: words of its own, or the relay's sentence", () => {
    expect(Object.keys(ERROR_TABLE).filter((code) => !(code in ERROR_TEXTS))).toEqual([]);
    // A code with words of its own never shows the relay's raw text.
    for (const [code, text] of Object.entries(ERROR_TEXTS)) if (text) expect(errorText(code, null, `raw ${code}`), code).toBe(text);
  });
});
